import { Effect, Result } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { LmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import { startTestApp, syncReads, type TestApp } from '../support/testApp.js';

describe('Accounts.createKey with a name', () => {
  let app: TestApp;
  afterEach(async () => {
    await app.stop();
  });

  it('keeps the trimmed name in the key view, logs it as ApiKeyNamed, and verify agrees', async () => {
    app = await startTestApp();
    const account = await Effect.runPromise(app.accounts.createAccount('named@example.com', 'scale'));
    const named = await Effect.runPromise(app.accounts.createKey(account.accountId, '  laptop  '));
    const unnamed = await Effect.runPromise(app.accounts.createKey(account.accountId));
    expect(named.name).toBe('laptop');
    expect(unnamed.name).toBeUndefined();
    expect(syncReads(app).key(named.id)?.name).toBe('laptop');
    expect(syncReads(app).key(unnamed.id)?.name).toBeUndefined();
    const types = [...syncReads(app).events()].map((event) => event.type);
    expect(types).toEqual(['AccountCreated', 'ApiKeyCreated', 'ApiKeyNamed', 'ApiKeyCreated']);
    expect(verifyViews((app.store as LmdbStore).databases).differences).toEqual([]);
  });

  it('refuses a name that is too long or holds control characters, and creates no key', async () => {
    app = await startTestApp();
    const account = await Effect.runPromise(app.accounts.createAccount('refused@example.com', 'scale'));
    for (const name of ['x'.repeat(101), 'a\nb', '   ']) {
      const result = await Effect.runPromise(Effect.result(app.accounts.createKey(account.accountId, name)));
      expect(Result.isFailure(result)).toBe(true);
    }
    expect(syncReads(app).keysOf(account.accountId)).toEqual([]);
    expect(syncReads(app).lastSeq()).toBe(1);
  });
});
