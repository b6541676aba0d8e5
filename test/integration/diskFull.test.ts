import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  killChildren,
  poll,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
  stderrShowing,
  submit,
} from '../support/processes.js';

/**
 * A real full disk: the data directory is a small tmpfs (this needs root, as CI and the developers' machines run;
 * elsewhere the tests are skipped and say so). Remounting it larger frees space without losing its files.
 */
const mount = (dir: string, megabytes: number) => {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m`, 'tmpfs', dir]);
};
const grow = (dir: string, megabytes: number) => execFileSync('mount', ['-o', `remount,size=${megabytes}m`, dir]);
const unmount = (dir: string) => {
  try {
    execFileSync('umount', ['-l', dir]);
  } catch {
    // Not mounted (the test failed before mounting).
  }
};

const canMount = (() => {
  const box = sandbox('airs-mount-probe');
  try {
    mount(box.dataDir, 1);
    unmount(box.dataDir);
    return true;
  } catch {
    return false;
  } finally {
    box.remove();
  }
})();

const boxes: Sandbox[] = [];
afterAll(async () => {
  await killChildren();
  for (const box of boxes) {
    unmount(box.dataDir);
    box.remove();
  }
});

const prompt = (i: number) => `${i} ${'x'.repeat(100_000)}`;

/** Submits 100 KB prompts one after another until the server answers something else than 202 (or `max` of them). */
const fillUntilRefused = async (server: ServerProcess, key: string, acknowledged: string[], max: number) => {
  for (let i = 0; i < max; i++) {
    const answer = await submit(server.url, key, 'echo', prompt(acknowledged.length));
    if (answer.status !== 202) return answer;
    acknowledged.push(answer.body.request_id as string);
  }
  throw new Error(`the disk never filled in ${max} submits`);
};

/** Submits until one is accepted again (space came back), within a bounded time. */
const submitUntilAccepted = async (server: ServerProcess, key: string, acknowledged: string[]) => {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await submit(server.url, key, 'echo', prompt(acknowledged.length));
    if (answer.status === 202) {
      acknowledged.push(answer.body.request_id as string);
      return;
    }
    expect(answer.status).toBe(503);
    if (Date.now() > deadline) throw new Error('submits were still refused 15 s after space came back');
    await sleep(250);
  }
};

const expectAllCompleted = async (server: ServerProcess, key: string, reqIds: readonly string[]) => {
  const deadline = Date.now() + 30_000;
  for (const reqId of reqIds) {
    for (;;) {
      const answer = await poll(server.url, key, reqId);
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      if (answer.body.status === 'completed') {
        expect((answer.body.response as string).length).toBeGreaterThan(100_000);
        break;
      }
      if (Date.now() > deadline) throw new Error(`${reqId} was still ${answer.body.status} after 30 s`);
      await sleep(100);
    }
  }
};

describe.skipIf(!canMount)('a full disk (a 20 MB tmpfs as the data directory)', { timeout: 120_000 }, () => {
  it('answers 503 with Retry-After while writes fail, keeps answering polls, stays up, recovers when space returns, and completes every acknowledged request', async () => {
    const box = sandbox('airs-disk-full');
    boxes.push(box);
    mount(box.dataDir, 20);
    // No free-space floor: the writes themselves must fail (LMDB's commit gets an I/O error).
    box.writeConfig({ storage: { minFreeMegabytes: 0 } });
    const { key } = await createAccountWithKey(box, 'full@example.com', 'enterprise');
    const server = await startServer(box);
    const acknowledged: string[] = [];

    const refused = await fillUntilRefused(server, key, acknowledged, 400);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(refused.body).toEqual({ error: { code: 'server_error', message: expect.stringMatching(/disk/) } });
    expect(refused.headers.get('ratelimit')).not.toBeNull();
    expect(acknowledged.length).toBeGreaterThan(10);
    // The log line is written before the 503 but asynchronously, through another pipe: it may be read a moment after.
    // The reason is the disk's: ENOSPC, or EIO where LMDB's write of a page came up short on the full disk (LMDB
    // reports a short write as EIO).
    expect(await stderrShowing(server, /writes to the data directory fail/)).toMatch(
      /"reason":"writes to the data directory fail: [^"]*(No space left on device|Input\/output error)/,
    );

    // Still up: what is stored is read as before, and more submits get the same clear answer.
    expect((await poll(server.url, key, acknowledged[0] as string)).status).toBe(200);
    // More submits get either a 202 (LMDB may still find free pages for a small write) or the same clear 503.
    const more = await fillUntilRefused(server, key, acknowledged, 400);
    expect(more.status).toBe(503);
    expect(server.child.exitCode).toBeNull();

    grow(box.dataDir, 200);
    await submitUntilAccepted(server, key, acknowledged);
    await expectAllCompleted(server, key, acknowledged);
    expect(await stderrShowing(server, /writes to the data directory succeed again/)).toMatch(
      /writes to the data directory succeed again/,
    );
    expect(await server.stop('SIGTERM')).toBe(0);
  });

  it('refuses new submits with 503 before the disk is full once free space falls under storage.minFreeMegabytes, and accepts them again when space is freed', async () => {
    const box = sandbox('airs-disk-floor');
    boxes.push(box);
    mount(box.dataDir, 20);
    box.writeConfig({ storage: { minFreeMegabytes: 12 } });
    const { key } = await createAccountWithKey(box, 'floor@example.com', 'enterprise');
    const server = await startServer(box);
    const acknowledged: string[] = [];

    // The watch reads free space every second: submits go on until it sees the floor passed.
    const refused = await fillUntilRefused(server, key, acknowledged, 400);
    expect(refused.status, JSON.stringify(refused.body)).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('30');
    expect(refused.body).toEqual({
      error: { code: 'server_error', message: expect.stringMatching(/low on disk space/) },
    });
    expect(await stderrShowing(server, /less than storage.minFreeMegabytes/)).toMatch(
      /less than storage.minFreeMegabytes \(12 MiB\)/,
    );
    // The floor kept the disk from filling: no write failed.
    expect(server.stderr()).not.toMatch(/writes to the data directory fail/);
    await expectAllCompleted(server, key, acknowledged);

    grow(box.dataDir, 200);
    await submitUntilAccepted(server, key, acknowledged);
    await expectAllCompleted(server, key, acknowledged.slice(-1));
    expect(await stderrShowing(server, /has room again/)).toMatch(/has room again/);
    expect(await server.stop('SIGTERM')).toBe(0);
  });
});
