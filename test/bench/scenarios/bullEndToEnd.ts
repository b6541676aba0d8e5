/**
 * The same job through BullMQ + Redis: Debian's redis-server started here with `--appendonly yes --appendfsync
 * always` (every write on disk before its reply, as airs answers 202 only after its commit is flushed), C producers
 * each awaiting `queue.add` (removeOnComplete: {age: 86400}), one worker process with concurrency 50 and an echo
 * processor. Timed from the first add until the worker has completed the last job.
 * redis-server and the worker run on the server CPUs, the producers on the load CPUs.
 */
import { join } from 'node:path';
import { driver } from '../bullmq/connection.js';
import type { Context } from '../context.js';
import { processTree } from '../cpuTime.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import { startRedis } from '../redis.js';
import type { EndToEndRun } from './airsEndToEnd.js';
import { produceWith, timeBaseline } from './baselineRun.js';

export const bullEndToEnd = async (
  context: Context,
  redisServer: string,
): Promise<EndToEndRun & { readonly driver: string; readonly redisVersion: string }> => {
  const { e2e } = context.options.sizes;
  const children: Child[] = [];
  try {
    const redis = await startRedis(redisServer, join(context.workDir, 'redis'), context.cpus.server);
    children.push(redis.child);
    const queue = 'airs-bench';
    const marks = [e2e.warmup, e2e.warmup + e2e.requests];
    const worker = startChild(
      'bullmq worker',
      process.execPath,
      [script('bullmq/worker'), JSON.stringify({ port: redis.port, queue, concurrency: e2e.bullConcurrency, marks })],
      { cpus: context.cpus.server },
    );
    children.push(worker);
    await worker.waitFor(/worker ready/, 20_000);

    const produce = produceWith(context, 'BullMQ', 'bullmq/producer', (count) => ({
      port: redis.port,
      queue,
      count,
      producers: e2e.clients,
    }));
    const run = await timeBaseline(context, 'BullMQ', worker, produce, () => [
      ...processTree(redis.child.pid),
      ...processTree(worker.pid),
    ]);
    return { ...run, driver: driver(), redisVersion: redis.version };
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGTERM', 10_000)));
  }
};
