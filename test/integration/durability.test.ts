import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  killChildren,
  type Sandbox,
  sandbox,
  startServer,
  submit,
} from '../support/processes.js';
import { parseStrace, type TracedCall } from '../support/straceLog.js';

const hasStrace = () => {
  try {
    execFileSync('strace', ['-V'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

const burst = 200;
const dataWrites = new Set(['pwrite64', 'pwritev', 'pwritev2', 'write', 'writev']);
const syncs = new Set(['fdatasync', 'fsync', 'msync']);
const onDataFile = (call: TracedCall) => /^\d+<[^>]*airs\.mdb>/.test(call.args);
const onSocket = (call: TracedCall) => /^\d+<(socket|TCP)/.test(call.args);

describe('Durability order, seen by strace', { timeout: 90_000 }, () => {
  let box: Sandbox | undefined;
  afterEach(async () => {
    await killChildren();
    box?.remove();
    box = undefined;
  });

  it('writes every 202 to its socket only after a sync of the data file that completed after the request was written', async () => {
    // Debian's strace; .ci/run installs it when missing. Without it this test cannot check anything: it fails.
    expect(hasStrace(), 'strace is not installed: apt-get install -y strace').toBe(true);
    box = sandbox('airs-durability');
    // A model that never answers within the test: the log sees submits, not the noise of processing.
    box.writeConfig({ models: [{ id: 'echo', provider: 'echo', delayMs: 600_000 }], processing: { concurrency: 1 } });
    const { key } = await createAccountWithKey(box, 'durable@example.com', 'enterprise');
    const tracePath = join(box.dir, 'strace.log');
    const server = await startServer(box, {
      timeoutMs: 60_000,
      wrapper: [
        'strace',
        '-f',
        '-qq',
        '-y',
        '-s',
        '65536',
        '-o',
        tracePath,
        '-e',
        `trace=${[...dataWrites, ...syncs].join(',')}`,
      ],
    });
    const answers = await Promise.all(
      Array.from({ length: burst }, (_, i) => submit(server.url, key, 'echo', `durable prompt ${i}`)),
    );
    expect(answers.map((answer) => answer.status)).toEqual(answers.map(() => 202));
    // Stop the traced server itself (a signal to strace would only detach it), then let strace finish its log.
    const strace = server.child.pid as number;
    const traced = Number(readFileSync(`/proc/${strace}/task/${strace}/children`, 'utf8').trim().split(' ')[0]);
    process.kill(traced, 'SIGTERM');
    await new Promise((resolve) => server.child.once('exit', resolve));

    const calls = parseStrace(readFileSync(tracePath, 'utf8'));
    const written = calls.filter((call) => dataWrites.has(call.name) && onDataFile(call));
    const synced = calls.filter((call) => syncs.has(call.name) && (call.name === 'msync' || onDataFile(call)));
    const acknowledgements = calls.filter((call) => dataWrites.has(call.name) && onSocket(call));
    expect(synced.length).toBeGreaterThan(0);

    const late: string[] = [];
    for (const answer of answers) {
      const reqId = String(answer.body.request_id);
      const firstWrite = written.find((call) => call.args.includes(reqId));
      const ack = acknowledgements.find((call) => call.args.includes(reqId) && call.args.includes('202'));
      expect(firstWrite, `no write of ${reqId} to the data file`).toBeDefined();
      expect(ack, `no 202 for ${reqId} on a socket`).toBeDefined();
      if (firstWrite === undefined || ack === undefined) continue;
      const durable = synced.some((sync) => sync.start > firstWrite.end && sync.end < ack.start);
      if (!durable) late.push(reqId);
    }
    expect(late, 'requests acknowledged before a sync that followed their write').toEqual([]);
  });
});
