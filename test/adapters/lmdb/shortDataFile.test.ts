import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { describe, expect, it } from 'vitest';
import { checkDataFile } from '../../../src/adapters/lmdb/dataFile.js';
import { createAccountWithKey, fileSandboxes, poll, runCli, startServer, submit } from '../../support/processes.js';

const newBox = fileSandboxes();

/** The page size, and the last page the newer meta page counts (LMDB's layout as lmdb-js builds it, 64-bit). */
const header = (file: string) => {
  const bytes = readFileSync(file);
  const pageSize = bytes.readUInt32LE(48);
  const meta = (at: number) => ({
    lastPage: Number(bytes.readBigUInt64LE(at + 144)),
    txnId: bytes.readBigUInt64LE(at + 152),
  });
  const [first, second] = [meta(0), meta(pageSize)];
  return { pageSize, lastPage: (first.txnId > second.txnId ? first : second).lastPage };
};

/**
 * Has LMDB itself leave the data file shorter than the last page its header counts: pages allocated and freed in one
 * transaction are never written, yet counted. The scratch value is rewritten first so that LMDB has free pages in
 * hand (overflow pages freed while dirty go back to them unwritten); everything written here is removed again.
 */
const shortenByLmdb = async (file: string) => {
  const root = open({ path: file, maxDbs: 20, overlappingSync: false });
  const scratch = root.openDB<Buffer, string>({ name: 'test.scratch', encoding: 'binary' });
  for (let i = 0; i < 6; i++) await scratch.put('churn', Buffer.alloc(20_000, i));
  root.transactionSync(() => {
    scratch.putSync('churn', Buffer.alloc(20_000, 9));
    scratch.putSync('big', Buffer.alloc(200_000));
    scratch.removeSync('big');
    scratch.removeSync('churn');
  });
  await root.close();
};

describe('a data file that LMDB left shorter than the last page its header counts', { timeout: 90_000 }, () => {
  it('is healthy: serve, keys list, keys revoke, backup and replay --verify work on it, and after a restart too', async () => {
    const box = newBox('airs-short-file');
    const { accountId, key, keyId } = await createAccountWithKey(box, 'short@example.com', 'enterprise');
    const file = join(box.dataDir, 'airs.mdb');
    const first = await startServer(box);
    const kept: string[] = [];
    for (let i = 0; i < 5; i++)
      kept.push((await submit(first.url, key, 'echo', `kept ${i}`)).body.request_id as string);
    expect(await first.stop('SIGTERM')).toBe(0);

    await shortenByLmdb(file);
    const { pageSize, lastPage } = header(file);
    const size = statSync(file).size;
    // The situation reported: the file ends before the page the header counts as its last.
    expect(size).toBeLessThan((lastPage + 1) * pageSize);

    const server = await startServer(box);
    for (const reqId of kept) expect((await poll(server.url, key, reqId)).status).toBe(200);
    const listed = await runCli(box, ['keys', 'list', '--account', accountId]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(keyId);
    const backup = await runCli(box, ['backup', join(box.dir, 'copy')]);
    expect(backup.code, backup.stderr).toBe(0);
    const verified = await runCli(box, ['replay', '--verify']);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    expect(verified.stdout).toMatch(/every view matches the log/);
    const revoked = await runCli(box, ['keys', 'revoke', keyId]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect((await poll(server.url, key, kept[0] as string)).status).toBe(401);
    expect(await server.stop('SIGTERM')).toBe(0);

    const restarted = await startServer(box);
    expect((await fetch(`${restarted.url}/readyz`)).status).toBe(200);
    expect(await restarted.stop('SIGTERM')).toBe(0);
    const again = await runCli(box, ['replay', '--verify', '--data-dir', join(box.dir, 'copy')]);
    expect(again.code, again.stdout + again.stderr).toBe(0);
  });
});

describe('the data file check beside a running server', { timeout: 90_000 }, () => {
  it('never judges a file damaged because a commit grew it meanwhile (the meta pages are read before the size)', async () => {
    const box = newBox('airs-growing-file');
    const { key } = await createAccountWithKey(box, 'growing@example.com', 'enterprise');
    const server = await startServer(box);
    const file = join(box.dataDir, 'airs.mdb');
    let bursting = true;
    const client = async () => {
      while (bursting) await submit(server.url, key, 'echo', 'x'.repeat(5_000));
    };
    const clients = Array.from({ length: 8 }, client);
    const refusals: string[] = [];
    let checks = 0;
    const until = Date.now() + 5_000;
    try {
      while (Date.now() < until) {
        checks++;
        try {
          checkDataFile(box.dataDir, file);
        } catch (error) {
          refusals.push((error as Error).message);
        }
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      bursting = false;
      await Promise.all(clients);
    }
    console.log(`${checks} checks while the file grew from commits to ${statSync(file).size} bytes`);
    expect(refusals).toEqual([]);
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
