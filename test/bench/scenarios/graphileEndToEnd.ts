/**
 * The same job through graphile-worker on the bench's PostgreSQL (the pg scenario): one worker process (`run`,
 * concurrency 50, a local queue of 500, a pool of concurrency + 2 connections as graphile-worker advises, quiet
 * logger, echo task) on the server CPUs with PostgreSQL; C producers in one process on the load CPUs, each awaiting
 * `addJob` (one transaction and one durable commit per job) before its next one, through a pool of C connections.
 * Same warm-up as airs. Timed from the first add until the last job's completion is committed (graphile/worker.ts).
 */
import type { Context } from '../context.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import type { EndToEndRun } from './airsEndToEnd.js';
import { produceWith, timeBaseline } from './baselineRun.js';

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

    const produce = produceWith(context, 'graphile-worker', 'graphile/producer', (count) => ({
      url,
      count,
      producers: e2e.clients,
      maxPoolSize: e2e.clients,
    }));
    return await timeBaseline(context, 'graphile-worker', worker, produce);
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGTERM', 10_000)));
  }
};
