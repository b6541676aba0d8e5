import { chmodSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  fileSandboxes,
  runCli,
  startServer,
  stderrShowing,
  submit,
  underUmask,
} from '../support/processes.js';

const newBox = fileSandboxes();

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Every entry of `dir` with its mode, the directory itself as '.'. */
const modesIn = (dir: string) =>
  Object.fromEntries([['.', modeOf(dir)], ...readdirSync(dir).map((name) => [name, modeOf(join(dir, name))])]);

describe('file modes of the data directory and of backups', { timeout: 90_000 }, () => {
  it('under umask 000, serve and the CLI make the data directory 0700 and every file in it 0600, and a backup the same', async () => {
    const box = newBox('airs-modes');
    const permissive = underUmask('000');
    const created = await runCli(box, ['accounts', 'create', '--email', 'modes@example.com', '--json'], {
      wrapper: permissive,
    });
    expect(created.code, created.stderr).toBe(0);
    const accountId = (JSON.parse(created.stdout) as { id: string }).id;
    const key = await runCli(box, ['keys', 'create', '--account', accountId, '--json'], { wrapper: permissive });
    expect(key.code, key.stderr).toBe(0);

    const server = await startServer(box, { wrapper: permissive });
    expect((await submit(server.url, (JSON.parse(key.stdout) as { key: string }).key, 'echo', 'private')).status).toBe(
      202,
    );
    const whileServing = modesIn(box.dataDir);
    // The log's environment, and the rate limiter's of this boot (limits-<boot id>.mdb).
    const limiterFiles = Object.keys(whileServing).filter((name) => /^limits-[\w-]+\.mdb(-lock)?$/.test(name));
    expect(limiterFiles).toHaveLength(2);
    expect(Object.keys(whileServing).sort()).toEqual(
      ['.', 'airs.mdb', 'airs.mdb-lock', 'airs.mdb.created', ...limiterFiles].sort(),
    );
    for (const [name, mode] of Object.entries(whileServing)) expect(mode, name).toBe(name === '.' ? '700' : '600');

    // A backup into a directory it makes, with a missing parent: both 0700, its files 0600.
    const parent = join(box.dir, 'backups');
    const dest = join(parent, 'today');
    const backup = await runCli(box, ['backup', dest], { wrapper: permissive });
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stderr).toBe('');
    expect(modeOf(parent)).toBe('700');
    for (const [name, mode] of Object.entries(modesIn(dest))) expect(mode, name).toBe(name === '.' ? '700' : '600');
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  it('an existing data directory open to others gets one warning line from serve and from each command, naming it and the chmod to run, and keeps its modes', async () => {
    const box = newBox('airs-modes-open');
    const { accountId } = await createAccountWithKey(box, 'open@example.com');
    chmodSync(box.dataDir, 0o755);
    chmodSync(join(box.dataDir, 'airs.mdb'), 0o644);
    const chmod = `chmod -R go-rwx ${box.dataDir}`;

    for (const args of [
      ['accounts', 'list', '--json'],
      ['keys', 'list', '--account', accountId],
      ['replay', '--verify'],
      ['accounts', 'create', '--email', 'second@example.com'],
    ]) {
      const result = await runCli(box, args);
      expect(result.code, result.stderr).toBe(0);
      const warnings = result.stderr.split('\n').filter((line) => line.includes('warning'));
      expect(warnings, args.join(' ')).toHaveLength(1);
      expect(warnings[0]).toMatch(/^airs: warning: the data directory .* is open to other users/);
      expect(warnings[0]).toContain('the directory 755');
      expect(warnings[0]).toContain('airs.mdb 644');
      expect(warnings[0]).toContain(chmod);
    }

    const server = await startServer(box);
    const lines = (await stderrShowing(server, /open to other users/))
      .split('\n')
      .filter((line) => line.includes('open to other users'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 40, dataDir: box.dataDir });
    expect(lines[0]).toContain(chmod);
    expect(await server.stop('SIGTERM')).toBe(0);
    expect(modeOf(box.dataDir)).toBe('755');
    expect(modeOf(join(box.dataDir, 'airs.mdb'))).toBe('644');

    chmodSync(box.dataDir, 0o700);
    chmodSync(join(box.dataDir, 'airs.mdb'), 0o600);
    const quiet = await runCli(box, ['accounts', 'list', '--json']);
    expect(quiet.stderr).toBe('');
  });
});
