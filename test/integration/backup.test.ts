import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, poll, runCli, startServer, submit } from '../support/processes.js';

const newBox = fileSandboxes();

describe('airs backup', { timeout: 90_000 }, () => {
  it('copies the data while the server takes a burst of submits: every request acknowledged before it began is in the copy, which verifies clean and serves', async () => {
    const box = newBox('airs-backup');
    const { key } = await createAccountWithKey(box, 'backup@example.com', 'enterprise');
    const server = await startServer(box);
    const acknowledged: Array<{ reqId: string; at: number }> = [];
    let bursting = true;
    const client = async () => {
      while (bursting) {
        const answer = await submit(server.url, key, 'echo', `burst ${acknowledged.length}`);
        if (answer.status === 202) acknowledged.push({ reqId: answer.body.request_id as string, at: Date.now() });
      }
    };
    const clients = Array.from({ length: 16 }, client);
    await new Promise((resolve) => setTimeout(resolve, 500));

    const dest = join(box.dir, 'copy');
    const began = Date.now();
    const backup = await runCli(box, ['backup', dest]);
    bursting = false;
    await Promise.all(clients);
    expect(backup.code, backup.stderr).toBe(0);
    expect(backup.stdout).toMatch(/^backup of .* written to /);
    const before = acknowledged.filter(({ at }) => at < began);
    expect(before.length).toBeGreaterThan(50);
    expect(acknowledged.length).toBeGreaterThan(before.length);

    const verified = await runCli(box, ['replay', '--verify', '--data-dir', dest]);
    expect(verified.code, verified.stdout + verified.stderr).toBe(0);

    // Restore is "point AIRS_DATA_DIR at it": a server on the copy knows the key and every request made before.
    const restored = await startServer({ ...box, env: (extra) => box.env({ ...extra, AIRS_DATA_DIR: dest }) });
    for (const { reqId } of before) expect((await poll(restored.url, key, reqId)).status, reqId).toBe(200);
    expect(await restored.stop('SIGTERM')).toBe(0);
    expect(await server.stop('SIGTERM')).toBe(0);
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
});
