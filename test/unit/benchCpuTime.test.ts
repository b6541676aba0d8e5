import { type ChildProcess, spawn } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { processTree, startCpuMeter } from '../bench/cpuTime.js';

/**
 * The bench's CPU meter (test/bench/cpuTime.ts), against what a real process says it used (`process.cpuUsage()`,
 * which covers all its threads). The process burns CPU on a signal and reports; the meter runs over the same span.
 */

/**
 * A node process that, on a line on its stdin, does `mainWork` million steps of arithmetic on its main thread and
 * `workerWork` million in a worker thread (started then and ended after, unless `keepWorker`); with `fork`, a child
 * process of its
 * own then does `workerWork` million too. Work, not time: on a loaded machine a process may get a fraction of a CPU.
 * It prints `ready <child pid>` first, and after the work `used <µs> <child µs>`: its own cpuUsage over the work (all
 * its threads) and the child's.
 */
const burner = `
  const { Worker } = require('node:worker_threads');
  const { fork } = require('node:child_process');
  const options = JSON.parse(process.argv[1]);
  const work = 'let x = 0; for (let i = 0; i < millions * 1e6; i++) x = (x * 31 + i) | 0;';
  const workHere = new Function('millions', work);
  const workerCode = "require('node:worker_threads').parentPort.on('message', (millions) => { " + work +
    " require('node:worker_threads').parentPort.postMessage('done'); });";
  const startWorker = () => new Promise((ready) => {
    const worker = new Worker(workerCode, { eval: true });
    worker.once('online', () => ready(worker));
  });
  const child = options.fork
    ? fork('-e', ["process.on('message', (millions) => { const before = process.cpuUsage(); " + work +
        " const used = process.cpuUsage(before); process.send(used.user + used.system); });"])
    : undefined;
  (async () => {
    const kept = options.keepWorker ? await startWorker() : undefined;
    process.stdout.write('ready ' + (child ? child.pid : '') + '\\n');
    process.stdin.once('data', async () => {
      const before = process.cpuUsage();
      const worker = kept ?? (await startWorker());
      const workerDone = new Promise((done) => worker.once('message', done));
      worker.postMessage(options.workerWork);
      workHere(options.mainWork);
      await workerDone;
      if (!options.keepWorker) await worker.terminate();
      let childUsed = 0;
      if (child) {
        child.send(options.workerWork);
        childUsed = await new Promise((done) => child.once('message', done));
      }
      const used = process.cpuUsage(before);
      process.stdout.write('used ' + (used.user + used.system) + ' ' + childUsed + '\\n');
    });
  })();
`;

type BurnerOptions = { mainWork: number; workerWork: number; keepWorker: boolean; fork?: boolean };

const running: ChildProcess[] = [];
afterEach(() => {
  for (const child of running.splice(0)) child.kill('SIGKILL');
});

const start = async (options: BurnerOptions) => {
  const child = spawn(process.execPath, ['-e', burner, JSON.stringify(options)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  running.push(child);
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    out += chunk;
  });
  const line = (pattern: RegExp) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setInterval(() => {
        const match = pattern.exec(out);
        if (match !== null) {
          clearInterval(timer);
          resolve(match);
        }
      }, 5);
      child.once('exit', () => {
        clearInterval(timer);
        reject(new Error(`the burner exited; it printed ${out}`));
      });
    });
  const ready = await line(/ready (\d*)\n/);
  return { child, pid: child.pid as number, forkedPid: Number(ready[1]), line };
};

/** Starts the work and resolves with what the process said it used (itself, its child), in seconds. */
const work = async (burning: Awaited<ReturnType<typeof start>>) => {
  burning.child.stdin?.write('go\n');
  const [, self, child] = await burning.line(/used (\d+) (\d+)\n/);
  return { self: Number(self) / 1e6, child: Number(child) / 1e6 };
};

describe('the CPU meter of the bench', () => {
  it('counts the time of every thread to within a few milliseconds when no thread ends in the window', async () => {
    const burning = await start({ mainWork: 15, workerWork: 50, keepWorker: true });
    const meter = startCpuMeter(() => [burning.pid]);
    const used = await work(burning);
    const use = meter.read();
    console.log(`process said ${used.self.toFixed(4)} s, meter ${use.seconds.toFixed(4)} s from ${use.source}`);
    expect(use.source).toBe('schedstat');
    // The worker did most of the work: the main thread alone would read about a quarter of it.
    expect(used.self).toBeGreaterThan(0.15);
    // The meter's window is a little wider than the process's own (the signal, the report).
    expect(Math.abs(use.seconds - used.self)).toBeLessThan(Math.max(0.03, 0.1 * used.self));
  });

  it('still counts a thread that ended inside the window, from the process totals', async () => {
    const burning = await start({ mainWork: 15, workerWork: 50, keepWorker: false });
    const meter = startCpuMeter(() => [burning.pid]);
    const used = await work(burning);
    const use = meter.read();
    console.log(`process said ${used.self.toFixed(4)} s, meter ${use.seconds.toFixed(4)} s from ${use.source}`);
    expect(use.source).toBe('stat');
    expect(used.self).toBeGreaterThan(0.15);
    // Ticks of 10 ms (user and system each rounded down at each end of the window).
    expect(Math.abs(use.seconds - used.self)).toBeLessThan(Math.max(0.06, 0.15 * used.self));
  });

  it('measures the workers a server forked when it is given the process tree', async () => {
    const burning = await start({ mainWork: 5, workerWork: 50, keepWorker: true, fork: true });
    expect(processTree(burning.pid)).toEqual([burning.pid, burning.forkedPid]);
    const meter = startCpuMeter(() => processTree(burning.pid));
    const used = await work(burning);
    const use = meter.read();
    console.log(
      `parent said ${used.self.toFixed(4)} s, its child ${used.child.toFixed(4)} s; the tree ${use.seconds.toFixed(4)} s from ${use.source}, ${use.processes} processes read, ${use.lost} lost`,
    );
    expect(use.processes).toBe(2);
    expect(used.child).toBeGreaterThan(0.15);
    // The child's own figure leaves out its side of the messages and the compiling of its work (background
    // threads): slack above; none below, where a meter of the parent alone would read half.
    const both = used.self + used.child;
    expect(use.seconds).toBeGreaterThan(both - 0.03);
    expect(use.seconds).toBeLessThan(both + Math.max(0.15, 0.3 * both));
  });
});
