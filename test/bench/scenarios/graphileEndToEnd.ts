/**
 * The same job through graphile-worker on the bench's PostgreSQL (the pg scenario): one worker process (`run`,
 * concurrency 50, a local queue of 500, a pool of concurrency + 2 connections as graphile-worker advises, quiet
 * logger, echo task) on the server CPUs with PostgreSQL; C producers in one process on the load CPUs, each awaiting
 * `addJob` (one transaction and one durable commit per job) before its next one, through a pool of C connections.
 * Same warm-up as airs. Timed from the first add until the last job's completion is committed (graphile/worker.ts).
 */
import type { Context } from '../context.js';
import { script } from '../paths.js';
import { type Child, runChild, startChild } from '../processes.js';
import type { EndToEndRun } from './airsEndToEnd.js';

type Produced = { startedAt: number; finishedAt: number; added: number; errors: number };

/** The worker's settings (reported with the figures). */
export const graphileSettings = (concurrency: number) => ({
  concurrency,
  localQueue: 500,
  maxPoolSize: concurrency + 2,
});

export const graphileEndToEnd = async (context: Context, url: string): Promise<EndToEndRun> => {
  const { e2e } = context.options.sizes;
  const children: Child[] = [];
  try {
    const marks = [e2e.warmup, e2e.warmup + e2e.requests];
    const worker = startChild(
      'graphile-worker',
      process.execPath,
      [script('graphile/worker'), JSON.stringify({ url, ...graphileSettings(e2e.bullConcurrency), marks })],
      { cpus: context.cpus.server },
    );
    children.push(worker);
    await worker.waitFor(/worker ready/, 30_000);

    const produce = async (count: number): Promise<Produced> => {
      const spec = { url, count, producers: e2e.clients, maxPoolSize: e2e.clients };
      const { exit, stdout, stderr } = await runChild(
        'graphile-worker producers',
        process.execPath,
        [script('graphile/producer'), JSON.stringify(spec)],
        { cpus: context.cpus.load, timeoutMs: e2e.timeoutSec * 1000 },
      );
      const line = stdout.trim().split('\n').pop() ?? '';
      if (exit.code !== 0 || !line.startsWith('{'))
        throw new Error(
          `graphile-worker producers failed (${exit.code ?? exit.signal}): ${stderr.trim().slice(-2000)}`,
        );
      const produced = JSON.parse(line) as Produced;
      if (produced.errors > 0)
        throw new Error(`graphile-worker: ${produced.errors} addJob calls failed: ${stderr.trim().slice(-1000)}`);
      return produced;
    };
    const markAt = async (mark: number) =>
      Number((await worker.waitFor(new RegExp(`mark ${mark} at (\\d+)`), e2e.timeoutSec * 1000))[1]);

    context.log(`  graphile-worker: warm-up with ${e2e.warmup} jobs`);
    await produce(e2e.warmup);
    await markAt(e2e.warmup);
    context.log(`  graphile-worker: ${e2e.requests} jobs from ${e2e.clients} producers`);
    const produced = await produce(e2e.requests);
    const doneAt = await markAt(e2e.warmup + e2e.requests);
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
    };
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGTERM', 10_000)));
  }
};
