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
import { script } from '../paths.js';
import { type Child, runChild, startChild } from '../processes.js';
import { startRedis } from '../redis.js';
import type { EndToEndRun } from './airsEndToEnd.js';

type Produced = { startedAt: number; finishedAt: number; added: number; errors: number };

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

    const produce = async (count: number): Promise<Produced> => {
      const spec = { port: redis.port, queue, count, producers: e2e.clients };
      const { exit, stdout, stderr } = await runChild(
        'bullmq producers',
        process.execPath,
        [script('bullmq/producer'), JSON.stringify(spec)],
        {
          cpus: context.cpus.load,
          timeoutMs: e2e.timeoutSec * 1000,
        },
      );
      const line = stdout.trim().split('\n').pop() ?? '';
      if (exit.code !== 0 || !line.startsWith('{'))
        throw new Error(`BullMQ producers failed (${exit.code ?? exit.signal}): ${stderr.trim().slice(-2000)}`);
      const produced = JSON.parse(line) as Produced;
      if (produced.errors > 0)
        throw new Error(`BullMQ: ${produced.errors} queue.add calls failed: ${stderr.trim().slice(-1000)}`);
      return produced;
    };
    const markAt = async (mark: number) =>
      Number((await worker.waitFor(new RegExp(`mark ${mark} at (\\d+)`), e2e.timeoutSec * 1000))[1]);

    context.log(`  BullMQ: warm-up with ${e2e.warmup} jobs`);
    await produce(e2e.warmup);
    await markAt(e2e.warmup);
    context.log(`  BullMQ: ${e2e.requests} jobs from ${e2e.clients} producers`);
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
      driver: driver(),
      redisVersion: redis.version,
    };
  } finally {
    await Promise.all(children.map((child) => child.stop('SIGTERM', 10_000)));
  }
};
