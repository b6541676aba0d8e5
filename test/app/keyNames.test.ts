import { Effect, Result } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { lmdbViewDifferences } from '../support/lmdbData.js';
import { loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

describe('Accounts.createKey with a name', () => {
  let app: TestApp;
  afterEach(async () => {
    await app.stop();
  });

  it("keeps the trimmed name in the key view, logs it as ApiKeyNamed, and LMDB's verify agrees", async () => {
    app = await startTestApp({ store: 'lmdb' });
    const account = await Effect.runPromise(app.accounts.createAccount('named@example.com', 'scale'));
    const named = await Effect.runPromise(app.accounts.createKey(account.accountId, '  laptop  '));
    const unnamed = await Effect.runPromise(app.accounts.createKey(account.accountId));
    expect(named.name).toBe('laptop');
    expect(unnamed.name).toBeUndefined();
    expect((await app.store.reads.key(named.id))?.name).toBe('laptop');
    expect((await app.store.reads.key(unnamed.id))?.name).toBeUndefined();
    const types = (await loggedEvents(app)).map((event) => event.type);
    expect(types).toEqual(['AccountCreated', 'ApiKeyCreated', 'ApiKeyNamed', 'ApiKeyCreated']);
    expect(lmdbViewDifferences(app)).toEqual([]);
  });

  it('refuses a name that is too long or holds control characters, and creates no key', async () => {
    app = await startTestApp();
    const account = await Effect.runPromise(app.accounts.createAccount('refused@example.com', 'scale'));
    for (const name of ['x'.repeat(101), 'a\nb', '   ']) {
      const result = await Effect.runPromise(Effect.result(app.accounts.createKey(account.accountId, name)));
      expect(Result.isFailure(result)).toBe(true);
    }
    expect(await app.store.reads.keysOf(account.accountId)).toEqual([]);
    expect(await app.store.reads.lastSeq()).toBe(1);
  });
});
