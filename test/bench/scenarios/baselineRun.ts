/**
 * What the end-to-end baselines (BullMQ, graphile-worker) share: their producers run as a child process on the load
 * CPUs (test/bench/producers.ts prints what they did), and their worker prints `mark N at T` when its N-th job is
 * done; a warm-up, then the timed run, from the first add until the last job is done.
 */
import type { Context } from '../context.js';
import { microsPer, startCpuMeter } from '../cpuTime.js';
import { script } from '../paths.js';
import { type Child, runChild } from '../processes.js';
import { waitForIdleAll } from '../procfs.js';
import type { EndToEndRun } from './airsEndToEnd.js';

type Produced = { startedAt: number; finishedAt: number; added: number; errors: number };

/** Runs the producer script `name` once with `spec` (its `count` jobs); fails unless every add succeeded. */
export const produceWith =
  (context: Context, label: string, name: string, spec: (count: number) => Record<string, unknown>) =>
  async (count: number): Promise<Produced> => {
    const { e2e } = context.options.sizes;
    const { exit, stdout, stderr } = await runChild(
      `${label} producers`,
      process.execPath,
      [script(name), JSON.stringify(spec(count))],
      { cpus: context.cpus.load, timeoutMs: e2e.timeoutSec * 1000 },
    );
    const line = stdout.trim().split('\n').pop() ?? '';
    if (exit.code !== 0 || !line.startsWith('{'))
      throw new Error(`${label} producers failed (${exit.code ?? exit.signal}): ${stderr.trim().slice(-2000)}`);
    const produced = JSON.parse(line) as Produced;
    if (produced.errors > 0) throw new Error(`${label}: ${produced.errors} adds failed: ${stderr.trim().slice(-1000)}`);
    return produced;
  };

/**
 * The warm-up and the timed run of a baseline whose worker is running (and stopped here once the run is timed).
 * With `cpuOf` (the baseline's server processes: redis-server and the worker), the timed run starts once they are
 * idle, and their CPU time from its first add until its last job is done is measured.
 */
export const timeBaseline = async (
  context: Context,
  label: string,
  worker: Child,
  produce: (count: number) => Promise<Produced>,
  cpuOf?: () => readonly number[],
): Promise<EndToEndRun> => {
  const { e2e } = context.options.sizes;
  const markAt = async (mark: number) =>
    Number((await worker.waitFor(new RegExp(`mark ${mark} at (\\d+)`), e2e.timeoutSec * 1000))[1]);
  context.log(`  ${label}: warm-up with ${e2e.warmup} jobs`);
  await produce(e2e.warmup);
  await markAt(e2e.warmup);
  if (cpuOf !== undefined) {
    const idle = await waitForIdleAll(cpuOf, { timeoutMs: e2e.timeoutSec * 1000 });
    if (!idle.idle) context.log(`  ${label}: still busy ${idle.waitedMs} ms after the warm-up; measuring anyway`);
  }
  context.log(`  ${label}: ${e2e.requests} jobs from ${e2e.clients} producers`);
  const meter = cpuOf === undefined ? undefined : startCpuMeter(cpuOf);
  const produced = await produce(e2e.requests);
  const doneAt = await markAt(e2e.warmup + e2e.requests);
  const cpu = meter?.read();
  const seconds = (doneAt - produced.startedAt) / 1000;
  await worker.stop('SIGTERM', 10_000);
  const failed = Number(/failed (\d+)/.exec(worker.stdout())?.[1] ?? 0);
  return {
    jobs: e2e.requests,
    seconds: Math.round(seconds * 1000) / 1000,
    jobsPerSec: Math.round(e2e.requests / seconds),
    submitSeconds: (produced.finishedAt - produced.startedAt) / 1000,
    completed: e2e.requests,
    failed,
    ...(cpu === undefined ? {} : { cpu, cpuUsPerRequest: microsPer(cpu, e2e.requests) }),
  };
};
