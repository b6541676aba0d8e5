/** The webhooks scenario's figures: its rows, its table of runs, and what `--against` compares. */
import type { Context, Figure, Row, ScenarioResult } from '../context.js';
import type { CpuUse } from '../cpuTime.js';
import { markdownTable } from '../report.js';
import { median, ratio, round } from '../stats.js';
import type { EndToEndRun } from './airsEndToEnd.js';

export const minRatio = 0.8;

export type SideName = 'without' | 'with';

/** The value below which `share` of the sorted values lie (nearest rank). */
export const percentile = (sorted: readonly number[], share: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number);

export type DeliveryCheck = {
  readonly expected: number;
  readonly received: number;
  readonly repeated: number;
  readonly latenciesMs: readonly number[];
  readonly lastReceiptAt: number;
};

export type Round = {
  readonly side: SideName;
  readonly round: number;
  readonly run: EndToEndRun;
  readonly deliveries?: DeliveryCheck & { readonly waitedSec: number };
  /**
   * The server's CPU per request (µs): from the first submit to the last completion, and on the webhooks side on to
   * the arrival of the last delivery (absent when not all of them arrived).
   */
  readonly cpuUs: { readonly toCompletion: number; readonly toDelivery?: number };
  readonly cpuToDelivery?: CpuUse;
};

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

export const report = (
  context: Context,
  rounds: readonly Round[],
  extra: {
    readonly unexpected: number;
    readonly malformed: number;
    /** The warm-up's deliveries: counted for exactly once, left out of the latency. */
    readonly warmupDeliveries: DeliveryCheck | undefined;
  },
): ScenarioResult => {
  const { webhooks } = context.options.sizes;
  const rate = (side: SideName) => round(mean(rounds.filter((r) => r.side === side).map((r) => r.run.jobsPerSec)));
  const rates = (side: SideName) =>
    rounds
      .filter((r) => r.side === side)
      .map((r) => `${r.run.jobsPerSec}/s`)
      .join(', ');
  const withRate = rate('with');
  const withoutRate = rate('without');
  const x = ratio(withRate, withoutRate);
  const timed = rounds.flatMap((r) => (r.deliveries === undefined ? [] : [r.deliveries]));
  const delivered = extra.warmupDeliveries === undefined ? timed : [extra.warmupDeliveries, ...timed];
  const expected = delivered.reduce((sum, d) => sum + d.expected, 0);
  const received = delivered.reduce((sum, d) => sum + d.received, 0);
  const repeated = delivered.reduce((sum, d) => sum + d.repeated, 0);
  const latencies = timed.flatMap((d) => d.latenciesMs).sort((a, b) => a - b);
  const p50 = percentile(latencies, 0.5);
  const p99 = percentile(latencies, 0.99);
  const exactlyOnce = received === expected && repeated === 0 && extra.unexpected === 0 && extra.malformed === 0;
  /** Requests per second from the first submit until the last delivery of the run arrived. */
  const toLastDelivery = (r: Round) =>
    r.deliveries === undefined || r.run.startedAt === undefined || r.deliveries.lastReceiptAt === 0
      ? undefined
      : round(r.run.jobs / ((r.deliveries.lastReceiptAt - r.run.startedAt) / 1000));
  const cpuOf = (side: SideName, pick: (r: Round) => number | undefined) =>
    median(rounds.filter((r) => r.side === side).map((r) => pick(r) ?? Number.NaN));
  const withCpuToDelivery = cpuOf('with', (r) => r.cpuUs.toDelivery);
  const withCpu = cpuOf('with', (r) => r.cpuUs.toCompletion);
  const withoutCpu = cpuOf('without', (r) => r.cpuUs.toCompletion);
  const rows: Row[] = [
    {
      scenario: `webhooks: ${webhooks.requests} echo requests end to end, ${webhooks.accounts} accounts each with an endpoint`,
      target: `>= ${minRatio.toFixed(2)} x without webhooks`,
      measured: `${x.toFixed(2)} x`,
      detail: `with ${withRate}/s (${rates('with')}), without ${withoutRate}/s (${rates('without')})`,
      met: context.options.smoke ? null : x >= minRatio,
    },
    {
      scenario: 'webhooks: each completion delivered exactly once (warm-ups included)',
      target: `${expected} of ${expected}, none repeated`,
      measured: `${received} of ${expected}${repeated > 0 ? `, ${repeated} repeated` : ''}`,
      detail: `${repeated} repeated, ${expected - received} missing, ${extra.unexpected} unexpected, ${extra.malformed} malformed`,
      met: exactlyOnce,
    },
    {
      scenario: 'webhooks: delivery latency, completion to receipt',
      target: 'none (reported)',
      measured: `p50 ${p50} ms, p99 ${p99} ms`,
      detail: `max ${latencies.at(-1) ?? Number.NaN} ms over ${latencies.length} deliveries of the timed runs`,
      met: null,
    },
    {
      scenario: 'webhooks: server CPU per request, deliveries included',
      target: 'none (reported)',
      measured: `${withCpuToDelivery} µs`,
      detail: `without webhooks ${withoutCpu} µs (${ratio(withCpuToDelivery, withoutCpu)} x); with webhooks to the last completion ${withCpu} µs (medians of the runs)`,
      met: null,
    },
  ];
  const table = markdownTable(
    [
      'Run',
      'Requests',
      'Seconds',
      'Req/s to last completion',
      'Req/s to last delivery',
      'Delivered',
      'Repeated',
      'p50 ms',
      'p99 ms',
      'CPU µs/req to last completion',
      'CPU µs/req to last delivery',
    ],
    rounds.map((r) => [
      `${r.side} webhooks, round ${r.round}`,
      String(r.run.jobs),
      String(r.run.seconds),
      String(r.run.jobsPerSec),
      String(toLastDelivery(r) ?? '-'),
      r.deliveries === undefined ? '-' : `${r.deliveries.received} of ${r.deliveries.expected}`,
      r.deliveries === undefined ? '-' : String(r.deliveries.repeated),
      r.deliveries === undefined ? '-' : String(percentile(r.deliveries.latenciesMs, 0.5)),
      r.deliveries === undefined ? '-' : String(percentile(r.deliveries.latenciesMs, 0.99)),
      String(r.cpuUs.toCompletion),
      String(r.cpuUs.toDelivery ?? '-'),
    ]),
  );
  const notes = [
    `webhooks: two airs serve (LMDB, processing.concurrency 64, webhooks.allowHttp and allowPrivateNetworks on both), ${webhooks.accounts} enterprise accounts each with a key; on one, each account has an endpoint for every event type (airs webhooks add) at a bare node:http receiver on 127.0.0.1 answering 200 at once. ${webhooks.requests} echo requests per run from ${webhooks.clients} autocannon connections split over the keys, after an untimed warm-up of ${webhooks.warmup} on each server; runs alternate without, with, with, without; rate = requests / (first submit to last RequestCompleted), the mean of each side's runs. After each run with webhooks the bench waits for every delivery; latency = receipt (receiver clock) - the request's RequestCompleted time (server clock, same machine). Server CPU = user + system time of every process of the server (all threads; cpuTime.ts) from the first submit to the last completion, and on the webhooks side on to the last delivery's arrival, over the run's requests; both servers idle before each run.`,
  ];
  const figures: Figure[] = [
    { key: 'webhooks.with.rps', label: 'webhooks with: req/s', value: withRate, better: 'higher' },
    { key: 'webhooks.without.rps', label: 'webhooks without: req/s', value: withoutRate, better: 'higher' },
    {
      key: 'webhooks.with.cpuUsToDelivery',
      label: 'webhooks with: CPU µs/req to last delivery',
      value: withCpuToDelivery,
      better: 'lower',
    },
    {
      key: 'webhooks.without.cpuUs',
      label: 'webhooks without: CPU µs/req',
      value: withoutCpu,
      better: 'lower',
    },
    { key: 'webhooks.p99Ms', label: 'webhooks: delivery p99 ms', value: p99, better: 'lower' },
  ];
  return {
    name: 'webhooks',
    rows,
    notes,
    tables: [table],
    figures,
    details: {
      rounds: rounds.map((r) => ({
        side: r.side,
        round: r.round,
        run: r.run,
        toLastDeliveryPerSec: toLastDelivery(r) ?? null,
        cpuUs: r.cpuUs,
        cpuToDelivery: r.cpuToDelivery ?? null,
        deliveries:
          r.deliveries === undefined
            ? null
            : {
                expected: r.deliveries.expected,
                received: r.deliveries.received,
                repeated: r.deliveries.repeated,
                waitedSec: r.deliveries.waitedSec,
                p50: percentile(r.deliveries.latenciesMs, 0.5),
                p99: percentile(r.deliveries.latenciesMs, 0.99),
              },
      })),
      withRate,
      withoutRate,
      ratio: x,
      cpuUs: { withToDelivery: withCpuToDelivery, withToCompletion: withCpu, without: withoutCpu },
      deliveries: { expected, received, repeated, unexpected: extra.unexpected, malformed: extra.malformed, p50, p99 },
    },
  };
};
