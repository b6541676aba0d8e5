import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Effect, Result } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../src/app/passwords.js';
import { passwordCredentialKey } from '../../src/domain/commands.js';
import { lmdbDatabasesOf, lmdbViewDifferences } from '../support/lmdbData.js';
import { loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';

const password = 'correct horse battery staple';

describe('Password hashes', () => {
  it('verify the password they were made from, and nothing else', async () => {
    const stored = await hashPassword(password);
    expect(stored).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(await verifyPassword(password, stored)).toBe(true);
    expect(await verifyPassword(`${password}!`, stored)).toBe(false);
    // One character of the hash changed: not the last, whose low bits are padding that base64url decoding drops.
    const at = stored.length - 10;
    const tampered = `${stored.slice(0, at)}${stored[at] === 'A' ? 'B' : 'A'}${stored.slice(at + 1)}`;
    expect(await verifyPassword(password, tampered)).toBe(false);
    expect(await verifyPassword(password, 'not a hash')).toBe(false);
    // Four scrypt runs of about 0.2 s of a core each: room for a machine busy with other test files.
  }, 30_000);

  it('are salted: the same password twice gives two different hashes', async () => {
    expect(await hashPassword(password)).not.toBe(await hashPassword(password));
  });
});

describe('Setting an account’s password', () => {
  let app: TestApp;
  afterEach(() => app.stop());

  it('appends AccountPasswordSet without the hash, keeps the hash beside the log, and LMDB holds no password in its files', async () => {
    // LMDB: the test reads its files and its verify.
    app = await startTestApp({ store: 'lmdb' });
    const { accountId } = await app.account();
    const account = await Effect.runPromise(app.accounts.setPassword(accountId, password));
    expect(account.passwordSetAt).toBeTypeOf('number');

    const events = (await loggedEvents(app)).filter((event) => event.type === 'AccountPasswordSet');
    expect(events).toEqual([
      { type: 'AccountPasswordSet', accountId, at: account.passwordSetAt, seq: expect.any(Number) },
    ]);
    const stored = await app.store.reads.credential(passwordCredentialKey(accountId));
    expect(await verifyPassword(password, stored as string)).toBe(true);
    expect(lmdbViewDifferences(app)).toEqual([]);

    // Nothing of the password in any file of the data directory: not in the log, not in a view.
    for (const file of readdirSync(app.dataDir)) {
      expect(readFileSync(join(app.dataDir, file)).includes(Buffer.from(password))).toBe(false);
    }
  });

  it('refuses a password shorter than 12 characters and writes nothing', async () => {
    app = await startTestApp();
    const { accountId } = await app.account();
    const before = await app.store.reads.lastSeq();
    const result = await Effect.runPromise(Effect.result(app.accounts.setPassword(accountId, 'too short')));
    expect(Result.isFailure(result) && result.failure.message).toBe(
      'a password needs at least 12 characters; this one has 9',
    );
    expect(await app.store.reads.lastSeq()).toBe(before);
  });

  it("lets LMDB's verify notice a password hash that is missing, or one that no event set", async () => {
    app = await startTestApp({ store: 'lmdb' });
    const { accountId } = await app.account();
    const other = await app.account();
    await Effect.runPromise(app.accounts.setPassword(accountId, password));
    const dbs = lmdbDatabasesOf(app);
    await dbs.credentials.remove(passwordCredentialKey(accountId));
    await dbs.credentials.put(passwordCredentialKey(other.accountId), 'scrypt$stray');
    expect(lmdbViewDifferences(app)).toEqual([
      `credential password:${other.accountId}: stored but the log sets no such credential`,
      `credential password:${accountId}: the log sets it but it is missing`,
    ]);
  });
});
