import { existsSync, readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { serveLockFile } from '../../src/adapters/cli/serveLock.js';
import { killChildren, runCli, type Sandbox, sandbox, startServer } from '../support/processes.js';

const boxes: Sandbox[] = [];
afterAll(async () => {
  await killChildren();
  for (const box of boxes) box.remove();
});

describe('one server per data directory', { timeout: 60_000 }, () => {
  it('refuses a second `serve` on the same directory with exit 2, naming it and the holder, while the first serves on and the CLI still works', async () => {
    const box = sandbox('airs-lock');
    boxes.push(box);
    const first = await startServer(box);
    const lockFile = serveLockFile(box.dataDir);
    expect(readFileSync(lockFile, 'utf8').trim()).toBe(String(first.child.pid));

    const second = await runCli(box, ['serve'], { env: { PORT: '0', HOST: '127.0.0.1' }, timeoutMs: 15_000 });
    expect(second.code, second.stderr).toBe(2);
    expect(second.stdout).toBe('');
    expect(second.stderr.trimEnd().split('\n')).toEqual([
      expect.stringMatching(`already served by process ${first.child.pid}`),
    ]);
    expect(second.stderr).toContain(box.dataDir);

    const listed = await runCli(box, ['accounts', 'create', '--email', 'beside@example.com']);
    expect(listed.code, listed.stderr).toBe(0);
    expect((await fetch(`${first.url}/v1/ai?req_id=req_x`)).status).toBe(401);
    expect(readFileSync(lockFile, 'utf8').trim()).toBe(String(first.child.pid));

    await first.stop('SIGTERM');
    expect(existsSync(lockFile)).toBe(false);
  });

  it('takes over the lock a killed server left behind', async () => {
    const box = sandbox('airs-lock-stale');
    boxes.push(box);
    const killed = await startServer(box);
    await killed.stop('SIGKILL');
    expect(existsSync(serveLockFile(box.dataDir))).toBe(true);

    const next = await startServer(box);
    expect(readFileSync(serveLockFile(box.dataDir), 'utf8').trim()).toBe(String(next.child.pid));
    await next.stop('SIGTERM');
  });
});
