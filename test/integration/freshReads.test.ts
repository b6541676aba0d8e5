import { execFileSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { binPath } from '../support/processes.js';
import { startTestApp, syncReads, type TestApp } from '../support/testApp.js';

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
  const tagOf = async (answer: ReturnType<typeof authenticate>) => {
    const settled = await answer;
    return '_tag' in settled ? settled._tag : 'Principal';
  };
  /** The next turn of the event loop: what a new HTTP request arrives in (before lmdb-js's own timers renew its
   * read snapshot). */
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('apply to the very next authentication, in the next turn of the event loop', async () => {
    app = await startTestApp({ store: 'lmdb' });
    const { key, keyId } = await app.account();
    // This read takes a snapshot that lmdb-js would otherwise keep until its next timer tick.
    expect(await tagOf(authenticate(key))).toBe('Principal');
    cliBlocking(app.dataDir, ['keys', 'revoke', keyId]);
    await nextTurn();
    expect(await tagOf(authenticate(key))).toBe('Unauthorized');
    expect(syncReads(app).key(keyId)?.revokedAt).toBeDefined();
  });

  it('a suspension from the CLI applies to the very next authentication of a valid key', async () => {
    app = await startTestApp({ store: 'lmdb' });
    const { accountId, key } = await app.account();
    expect(await tagOf(authenticate(key))).toBe('Principal');
    cliBlocking(app.dataDir, ['accounts', 'suspend', accountId]);
    await nextTurn();
    expect(await tagOf(authenticate(key))).toBe('Forbidden');
  });
});
