import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { binPath } from '../support/processes.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/** Runs the CLI and blocks this process until it ends, so no timer of ours can fire in between. */
const cliBlocking = (dataDir: string, args: string[]) =>
  execFileSync(process.execPath, [binPath, ...args], {
    env: { ...process.env, AIRS_DATA_DIR: dataDir, AIRS_CONFIG: '' },
    encoding: 'utf8',
  });

describe('Changes made by another process', () => {
  let app: TestApp;
  afterEach(() => app?.stop());

  const authenticate = (key: string) => app.auth.authenticate(`Bearer ${key}`);
  const tagOf = (answer: ReturnType<typeof authenticate>) => ('_tag' in answer ? answer._tag : 'Principal');

  it('apply to the very next authentication, even within the same turn of the event loop', async () => {
    app = await startTestApp();
    const { key, keyId } = await app.account();
    // This read takes a snapshot that lmdb-js would otherwise keep until its next timer tick.
    expect(tagOf(authenticate(key))).toBe('Principal');
    cliBlocking(app.dataDir, ['keys', 'revoke', keyId]);
    // The snapshot taken above does not show the revocation yet: this is the window the refresh closes.
    expect(app.store.reads.key(keyId)?.revokedAt).toBeUndefined();
    expect(tagOf(authenticate(key))).toBe('Unauthorized');
  });

  it('a suspension from the CLI applies to the very next authentication of a valid key', async () => {
    app = await startTestApp();
    const { accountId, key } = await app.account();
    expect(tagOf(authenticate(key))).toBe('Principal');
    cliBlocking(app.dataDir, ['accounts', 'suspend', accountId]);
    expect(app.store.reads.account(accountId)?.suspended).toBe(false);
    expect(tagOf(authenticate(key))).toBe('Forbidden');
  });
});
