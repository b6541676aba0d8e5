import { spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Decision } from '../../src/domain/rateLimit/gcra.js';
import type { StoredBytes } from '../../src/ports/FileBytes.js';
import type { Batch, ThrottleRefused } from '../../src/ports/Store.js';
import { fromWire, type WireOutcome } from './processWire.js';
import type { OtherProcess } from './storeFactory.js';
import type { ProcessQuestion } from './storeProcess.js';

/** The checkout: the nearest folder above this file with a package.json (this file may run from dist/test/). */
const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
};

/** An entry program of the suite (`lmdbProcess`) as built into dist/ (`npm run build`), run by plain node. */
export const builtProgram = (name: string): string => {
  const path = join(findRoot(dirname(fileURLToPath(import.meta.url))), 'dist', 'test', 'contract', `${name}.js`);
  if (!existsSync(path)) throw new Error(`${path} is missing: run "npm run build" first`);
  return path;
};

/** Bounds that only a hung child reaches (generous for a loaded 2-core machine). */
const startBoundMs = 30_000;
const blockingBoundMs = 30_000;

type Reply = {
  id: number;
  outcomes?: WireOutcome[];
  decisions?: Decision[];
  refused?: ThrottleRefused | null;
  stored?: StoredBytes | null;
  failure?: string;
};

/**
 * Starts `program` with `args` (a storeProcess.ts entry such as lmdbProcess.js on a data directory) and resolves once
 * its store is open. `close` ends its stdin and waits for it to exit (killing it if it does not).
 */
export const startOtherProcess = async (
  program: string,
  args: readonly string[],
): Promise<OtherProcess & { close(): Promise<void> }> => {
  const child = spawn(process.execPath, [program, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const pending = new Map<number, { resolve: (reply: Reply) => void; reject: (error: Error) => void }>();
  let nextId = 0;
  let gone: Error | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${program} did not start within ${startBoundMs} ms`)),
      startBoundMs,
    );
    createInterface({ input: child.stdout }).on('line', (line) => {
      const reply = JSON.parse(line) as Reply & { ready?: boolean };
      if (reply.ready === true) {
        clearTimeout(timer);
        resolve();
        return;
      }
      pending.get(reply.id)?.resolve(reply);
      pending.delete(reply.id);
    });
    void exited.then(() => {
      clearTimeout(timer);
      gone = new Error(`${program} exited (code ${child.exitCode}, signal ${child.signalCode})`);
      reject(gone);
      for (const { reject: fail } of pending.values()) fail(gone);
      pending.clear();
    });
  });
  await ready;

  const ask = (question: ProcessQuestion) =>
    new Promise<Reply>((resolve, reject) => {
      if (gone !== undefined) return reject(gone);
      const id = ++nextId;
      pending.set(id, { resolve, reject });
      child.stdin.write(`${JSON.stringify({ ...question, id })}\n`);
    }).then((reply) => {
      if (reply.failure !== undefined) throw new Error(`the other process failed: ${reply.failure}`);
      return reply;
    });

  return {
    commit: async (batch) => ((await ask({ op: 'commit', batch })).outcomes ?? []).map(fromWire),
    spend: async (spends) => (await ask({ op: 'spend', spends })).decisions ?? [],
    reserveThrottlePlace: async (asked) => (await ask({ op: 'reserve', ask: asked })).refused ?? undefined,
    writeBlob: async (blobId, seed, bytes) => {
      const { stored } = await ask({ op: 'writeBlob', blobId, seed, bytes });
      if (stored == null) throw new Error('the other process answered a blob write with nothing stored');
      return stored;
    },
    digestBlob: async (blobId) => (await ask({ op: 'digestBlob', blobId })).stored ?? undefined,
    commitBlocking: (batch: Batch) => {
      const run = spawnSync(process.execPath, [program, ...args, '--commit-once'], {
        input: JSON.stringify(batch),
        encoding: 'utf8',
        timeout: blockingBoundMs,
      });
      if (run.status !== 0) throw new Error(`${program} --commit-once failed (${run.status}): ${run.stderr}`);
      return (JSON.parse(run.stdout) as WireOutcome[]).map(fromWire);
    },
    close: async () => {
      child.stdin.end();
      const killer = setTimeout(() => child.kill('SIGKILL'), startBoundMs);
      await exited;
      clearTimeout(killer);
    },
  };
};
