import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inOddChunks, readAll } from '../contract/blobBytes.js';
import { withLmdbStore } from '../support/lmdbData.js';
import { createAccountWithKey, fileSandboxes, poll, runCli, startServer, submit } from '../support/processes.js';

/** A small tmpfs at `dir` (needs root, as CI and the developers' machines run); its unmount, or undefined where none
 * can be made. */
const mountTmpfs = (dir: string, options: string): (() => void) | undefined => {
  mkdirSync(dir);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', options, 'tmpfs', dir], { stdio: 'ignore' });
  } catch {
    return undefined;
  }
  return () => execFileSync('umount', ['-l', dir]);
};

const newBox = fileSandboxes();

describe('airs backup', { timeout: 90_000 }, () => {
  it('copies the data while the server takes a burst of submits: every request acknowledged before it began is in the copy, which verifies clean and serves', async () => {
    const box = newBox('airs-backup');
    const { key } = await createAccountWithKey(box, 'backup@example.com', 'enterprise');
    const server = await startServer(box);
    const acknowledged: string[] = [];
    let bursting = true;
    const client = async () => {
      while (bursting) {
        const answer = await submit(server.url, key, 'echo', `burst ${acknowledged.length}`);
        if (answer.status === 202) acknowledged.push(answer.body.request_id as string);
      }
    };
    const clients = Array.from({ length: 16 }, client);
    // Enough acknowledged before the copy begins, however fast this machine is today (bounded: 30 s).
    const enoughBy = Date.now() + 30_000;
    while (acknowledged.length <= 50 && Date.now() < enoughBy) await new Promise((resolve) => setTimeout(resolve, 50));

    const dest = join(box.dir, 'copy');
    // By order, not by clock: every answer in the list now came before the backup was started (two answers can share
    // the millisecond the copy begins in).
    const before = acknowledged.slice();
    const backup = await runCli(box, ['backup', dest]);
    bursting = false;
    await Promise.all(clients);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/^backup of .* written to /);
    expect(before.length).toBeGreaterThan(50);
    expect(acknowledged.length).toBeGreaterThan(before.length);

    const verified = await runCli(box, ['replay', '--verify', '--data-dir', dest]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);

    // Restore is "point AIRS_DATA_DIR at it": a server on the copy knows the key and every request made before.
    const restored = await startServer({ ...box, env: (extra) => box.env({ ...extra, AIRS_DATA_DIR: dest }) });
    for (const reqId of before) expect((await poll(restored.url, key, reqId)).status, reqId).toBe(200);
    expect(await restored.stop('SIGTERM')).toBe(0);
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  it("copies uploaded files' bytes with the log: a blob stored before the copy reads back whole from it, which verifies clean", async () => {
    const box = newBox('airs-backup-files');
    await createAccountWithKey(box, 'files@example.com');
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    await withLmdbStore(box.dataDir, (store) =>
      store.files.write('file-backed-up', inOddChunks(bytes), bytes.length, 1_000),
    );
    const dest = join(box.dir, 'copy');
    const backup = await runCli(box, ['backup', dest]);
    expect(backup.code, backup.stderr).toBe(0);
    const verified = await runCli(box, ['replay', '--verify', '--data-dir', dest]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);
    await withLmdbStore(dest, async (copy) => {
      expect((await readAll(copy.files.read('file-backed-up'))).bytes.equals(bytes)).toBe(true);
      const listed = [];
      for await (const entry of copy.files.list()) listed.push(entry);
      expect(listed).toEqual([{ blobId: 'file-backed-up', startedAt: 1_000 }]);
    });
  });

  it('never overwrites: a destination that is not empty, or the data directory itself, is refused with exit 2', async () => {
    const box = newBox('airs-backup-refused');
    await createAccountWithKey(box, 'refused@example.com');
    const full = join(box.dir, 'full');
    mkdirSync(full);
    writeFileSync(join(full, 'something'), 'x');
    const refused = await runCli(box, ['backup', full]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/is not empty/);
    expect((await runCli(box, ['backup', box.dataDir])).code).toBe(2);
  });

  it('a destination that cannot be made (under /proc, under a file, on a read-only disk) fails at once with one stderr line and exit 2; a copy that fails midway (a disk too small) leaves no half-written file', async () => {
    const box = newBox('airs-backup-nowhere');
    await createAccountWithKey(box, 'nowhere@example.com');
    const file = join(box.dir, 'a-file');
    writeFileSync(file, 'x');
    const readOnly = join(box.dir, 'read-only');
    const unmount = mountTmpfs(readOnly, 'ro,size=1m');
    const tiny = join(box.dir, 'tiny');
    const unmountTiny = mountTmpfs(tiny, 'size=8k');
    try {
      const cases: Array<[string, RegExp]> = [
        ['/proc/airs-nope', /cannot be created: \/proc\/airs-nope \(ENOENT\)/],
        ['/proc/airs-nope/deeper', /cannot be created: \/proc\/airs-nope \(ENOENT\)/],
        [join(file, 'backup'), /a-file is a file, not a directory/],
        ...(unmount === undefined
          ? []
          : [[join(readOnly, 'backup'), /cannot be created: .*\(EROFS\)/] as [string, RegExp]]),
      ];
      for (const [dest, message] of cases) {
        const started = Date.now();
        // Killed after 15 s: a destination that spins fails here instead of holding the suite for minutes.
        const result = await runCli(box, ['backup', dest], { timeoutMs: 15_000 });
        expect(result.code, `${dest}: ${result.stderr}`).toBe(2);
        expect(result.stdout).toBe('');
        expect(result.stderr.trimEnd().split('\n'), dest).toHaveLength(1);
        expect(result.stderr).toMatch(message);
        console.log(`backup to ${dest}: refused in ${Date.now() - started} ms`);
      }
      if (unmount !== undefined) {
        // An existing, empty directory on a read-only disk: the copy itself fails, and no partial file is left.
        const failed = await runCli(box, ['backup', readOnly], { timeoutMs: 15_000 });
        expect(failed.code, failed.stderr).toBe(1);
        expect(failed.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(failed.stderr).toMatch(/backup failed: Read-only file system/);
        expect(readdirSync(readOnly)).toEqual([]);
      }
      if (unmountTiny !== undefined) {
        // A disk too small for the copy: the half-written file is removed, not left to be taken for a backup.
        const full = await runCli(box, ['backup', tiny], { timeoutMs: 15_000 });
        expect(full.code, full.stderr).toBe(1);
        expect(full.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(full.stderr).toMatch(/backup failed: .*(No space|ENOSPC|Input\/output)/);
        expect(readdirSync(tiny)).toEqual([]);
      }
    } finally {
      unmount?.();
      unmountTiny?.();
    }
    expect(existsSync('/proc/airs-nope')).toBe(false);
  });
});
