/** End to end, airs against BullMQ + Redis in the same run: time until all N requests are completed. */
import type { Context, Figure, Row, ScenarioResult } from '../context.js';
import { redisServerPath } from '../redis.js';
import { ratio, round } from '../stats.js';
import { airsEndToEnd } from './airsEndToEnd.js';
import { bullEndToEnd } from './bullEndToEnd.js';

const minRatio = 2;

export const endToEndScenario = async (context: Context): Promise<ScenarioResult> => {
  const { e2e } = context.options.sizes;
  const notes: string[] = [];
  const airs = await airsEndToEnd(context);
  context.log(
    `  airs: ${airs.jobs} in ${airs.seconds} s (${airs.jobsPerSec}/s; submitting took ${airs.submitSeconds} s), CPU ${airs.cpuUsPerRequest} µs/req`,
  );

  const redisServer = redisServerPath();
  let bull: Awaited<ReturnType<typeof bullEndToEnd>> | undefined;
  if (redisServer === undefined) {
    const message =
      'redis-server not found: the BullMQ + Redis baseline is skipped (Debian: apt-get install -y redis-server, or set REDIS_SERVER)';
    context.log(`  ${message}`);
    notes.push(message);
  } else {
    bull = await bullEndToEnd(context, redisServer);
    context.log(
      `  BullMQ: ${bull.jobs} in ${bull.seconds} s (${bull.jobsPerSec}/s; adding took ${bull.submitSeconds} s), CPU ${bull.cpuUsPerRequest} µs/job`,
    );
    notes.push(
      `End to end: BullMQ reached Redis ${bull.redisVersion} through ${bull.driver}; redis-server --appendonly yes --appendfsync always; ${e2e.clients} producers awaiting queue.add, one worker process with concurrency ${e2e.bullConcurrency}.`,
    );
  }
  notes.push(
    `End to end: ${e2e.requests} echo requests after an untimed warm-up of ${e2e.warmup} on each system; airs completion read from its log (time of the last RequestCompleted), BullMQ's from the worker's completed events.`,
  );
  const speedup = bull === undefined ? Number.NaN : ratio(bull.seconds, airs.seconds);
  const rows: Row[] = [
    {
      scenario: `End to end: ${e2e.requests} echo requests, ${e2e.clients} clients, until all completed`,
      target: `>= ${minRatio} x BullMQ`,
      measured: bull === undefined ? 'no baseline' : `${speedup.toFixed(2)} x`,
      detail: `airs ${airs.seconds} s (${airs.jobsPerSec}/s)${bull === undefined ? '' : `, BullMQ ${bull.seconds} s (${bull.jobsPerSec}/s)`}`,
      met: bull === undefined || context.options.smoke ? null : speedup >= minRatio,
    },
    {
      scenario: 'End to end: server CPU per request',
      target: 'none (reported)',
      measured: `${airs.cpuUsPerRequest} µs`,
      detail: `airs used ${round((airs.cpu?.seconds ?? Number.NaN) / (airs.cpu?.wallSeconds ?? Number.NaN), 2)} of a CPU${bull === undefined ? '' : `; BullMQ (redis-server + worker) ${bull.cpuUsPerRequest} µs per job (${ratio(airs.cpuUsPerRequest ?? Number.NaN, bull.cpuUsPerRequest ?? Number.NaN)} x)`}`,
      met: null,
    },
  ];
  notes.push(
    `End to end: server CPU = user + system time of every process of the system under test (airs; redis-server and the BullMQ worker), all threads, from the first submit until the last request was seen completed, over the requests (${[...new Set([airs.cpu?.source, bull?.cpu?.source].filter((s) => s !== undefined))].join(' and ')}: see cpuTime.ts); each timed run starts once its servers are idle after the warm-up.`,
  );
  const figures: Figure[] = [
    { key: 'e2e.airs.rps', label: 'e2e airs: req/s', value: airs.jobsPerSec, better: 'higher' },
    {
      key: 'e2e.airs.cpuUs',
      label: 'e2e airs: CPU µs/req',
      value: airs.cpuUsPerRequest ?? Number.NaN,
      better: 'lower',
    },
    ...(bull === undefined
      ? []
      : ([
          { key: 'e2e.ratio', label: 'e2e airs/BullMQ speed', value: speedup, better: 'higher' },
          { key: 'e2e.bullmq.rps', label: 'e2e BullMQ: jobs/s', value: bull.jobsPerSec, better: 'higher' },
          {
            key: 'e2e.bullmq.cpuUs',
            label: 'e2e BullMQ: CPU µs/job',
            value: bull.cpuUsPerRequest ?? Number.NaN,
            better: 'lower',
          },
        ] satisfies Figure[])),
  ];
  return { name: 'e2e', rows, notes, figures, details: { airs, bullmq: bull ?? null, speedup } };
};
