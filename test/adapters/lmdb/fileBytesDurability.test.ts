import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { realpathSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { environmentFile } from '../../../src/adapters/lmdb/databases.js';
import { partBytes } from '../../../src/ports/FileBytes.js';
import { seededBytes } from '../../contract/blobBytes.js';
import { builtProgram } from '../../contract/otherProcess.js';
import { readStrace, type Syscall } from '../../support/straceLog.js';
import { tempDataDir } from '../../support/testApp.js';

/**
 * `files.write` on LMDB resolves only once its parts are on disk: seen by strace in a process that writes a blob
 * (the contract suite's store process, test/contract/storeProcess.ts) and then answers on its stdout. Each sync is
 * delayed by 20 ms, so an answer that did not wait for the sync would be written before it ends.
 */

const syncCalls = new Set(['fdatasync', 'fsync', 'msync']);

/** How strace prints bytes with -xx: every byte as \xNN. */
const asTraced = (bytes: Uint8Array) =>
  Array.from(bytes, (byte) => `\\x${byte.toString(16).padStart(2, '0')}`).join('');

/** A path as -y prints it under -xx (its bytes in hex too), as text. */
const pathOf = (call: Syscall): string | undefined =>
  call.path === undefined
    ? undefined
    : Buffer.from(
        Array.from(call.path.matchAll(/\\x([0-9a-f]{2})/g), ([, hex]) => Number.parseInt(hex ?? '', 16)),
      ).toString();

const traceArgs = (traceFile: string) => [
  '-f', // lmdb-js commits on a thread of its own
  '-qq',
  '--seccomp-bpf',
  '-y', // fds as paths
  '-xx', // every byte as hex, so a part's bytes can be found
  '-s',
  '256', // enough of each write to find a part's first bytes and the answer
  '-e',
  'trace=pwrite64,pwritev,pwritev2,write,writev,fdatasync,fsync,msync',
  '-e',
  'inject=fdatasync,fsync,msync:delay_enter=20000',
  '-o',
  traceFile,
  '--',
];

const directories: string[] = [];
afterEach(() => {
  for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe.runIf(process.platform === 'linux')('the durability of a blob written to LMDB, seen by strace', () => {
  it('answers a blob write only after an fdatasync of the data file that followed the write of each of its parts', async () => {
    if (spawnSync('strace', ['-V']).status !== 0)
      throw new Error('strace is not installed: this test needs it (apt-get install -y strace; .ci/run installs it)');
    const dir = tempDataDir('airs-blob-durability');
    directories.push(dir);
    const traceFile = join(dir, 'strace.log');
    const dataDir = join(dir, 'data');
    const child = spawn('strace', [...traceArgs(traceFile), process.execPath, builtProgram('lmdbProcess'), dataDir], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    expect(JSON.parse((await lines.next()).value as string)).toEqual({ ready: true });
    const size = partBytes + partBytes / 2;
    child.stdin.write(
      `${JSON.stringify({ op: 'writeBlob', id: 1, blobId: 'file-durable', seed: 'durable', bytes: size })}\n`,
    );
    const answer = JSON.parse((await lines.next()).value as string) as { stored?: { bytes: number } };
    expect(answer.stored?.bytes).toBe(size);
    child.stdin.end();
    await once(child, 'exit');

    const calls = readStrace(traceFile);
    const dataFile = environmentFile(realpathSync(dataDir));
    const answered = calls.find(
      (call) =>
        // Its stdout, whatever kind of file it is.
        /^write\(1</.test(call.text) && call.text.includes(asTraced(Buffer.from('"stored"'))),
    );
    expect(answered, 'the answer was written to stdout').toBeDefined();
    const answeredAt = (answered as Syscall).entry;
    const bytes = seededBytes('durable', size);
    for (const offset of [0, partBytes]) {
      const marker = asTraced(bytes.subarray(offset, offset + 32));
      const writes = calls.filter(
        (call) => pathOf(call) === dataFile && call.text.includes(marker) && call.exit < answeredAt,
      );
      expect(writes.length, `the part at ${offset} was written to ${dataFile} before the answer`).toBeGreaterThan(0);
      const lastWrite = Math.max(...writes.map((call) => call.exit));
      const synced = calls.some(
        (call) =>
          syncCalls.has(call.name) && pathOf(call) === dataFile && call.entry > lastWrite && call.exit < answeredAt,
      );
      expect(synced, `an fdatasync of ${dataFile} followed the part at ${offset} and ended before the answer`).toBe(
        true,
      );
    }
  }, 60_000);
});
