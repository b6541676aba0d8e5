/**
 * `--only=webhooks` (issue 30): end to end with a webhook endpoint on every account, against the same without.
 *
 * Two `airs serve` (LMDB), each with its own data directory and the same config (the bench config, and
 * `webhooks.allowHttp` and `webhooks.allowPrivateNetworks` true on both), each with the same number of enterprise
 * accounts and one key each, made with the CLI. On one, every account also has a webhook endpoint (`airs webhooks
 * add`) for every event type, pointing at
 * a receiver on 127.0.0.1 (webhookReceiver.ts: bare node:http, answers 200 at once, records receipts by
 * `webhook-id`). Each server gets an untimed warm-up, then timed runs alternate without, with, with, without...,
 * each measured as the e2e scenario measures (airsEndToEnd.ts: `echo` requests submitted by autocannon connections,
 * each awaiting its 202, split evenly over the accounts' keys; timed from the first submit to the last
 * `RequestCompleted` in the log). After each run on the webhooks side the bench waits until every completed request
 * has its delivery, then checks each was received exactly once and takes the latency of each from the request's
 * completion (the `at` of its `RequestCompleted`, which the poll answer shows in seconds as `completed_at`) to its
 * arrival at the receiver.
 */
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { airsJson, benchConfig, type Credentials, call, createAccountWithKey, sandbox, startAirs } from '../airs.js';
import { type Context, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import { waitForIdle } from '../procfs.js';
import { markdownTable } from '../report.js';
import { ratio, round } from '../stats.js';
import type { Receipt, ReceiverAnswer, ReceiverAsk } from '../webhookReceiver.js';
import { type EndToEndRun, lmdbFollower, timeEndToEnd } from './airsEndToEnd.js';

const minRatio = 0.8;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type SideName = 'without' | 'with';
type AddedEndpoint = { readonly id: string; readonly url: string };

/** The receiver, asked over IPC (one question at a time: answers come back in order). */
type Receiver = { readonly child: Child; readonly url: string; ask(ask: ReceiverAsk): Promise<ReceiverAnswer> };

const startReceiver = async (context: Context): Promise<Receiver> => {
  const child = startChild('webhook receiver', process.execPath, [script('webhookReceiver')], {
    cpus: context.cpus.load,
    ipc: true,
  });
  const match = await child.waitFor(/webhook receiver listening on (http:\/\/\S+)/, 20_000);
  return {
    child,
    url: match[1] as string,
    ask: (ask) =>
      new Promise((resolve, reject) => {
        const onExit = () => reject(new Error(`the webhook receiver exited: ${child.stderr().slice(-2000)}`));
        child.process.once('exit', onExit);
        child.process.once('message', (answer: ReceiverAnswer) => {
          child.process.off('exit', onExit);
          resolve(answer);
        });
        child.process.send(ask);
      }),
  };
};

type Side = {
  readonly name: SideName;
  readonly url: string;
  readonly pid: number;
  readonly accounts: readonly Credentials[];
  readonly endpoints: readonly AddedEndpoint[];
  readonly store: ReturnType<typeof openLmdbStore>;
  readonly stop: () => Promise<void>;
};

const startSide = async (context: Context, name: SideName, receiverUrl: string): Promise<Side> => {
  const { webhooks } = context.options.sizes;
  const config = { ...benchConfig, webhooks: { allowHttp: true, allowPrivateNetworks: true } };
  const box = sandbox(context.workDir, `webhooks-${name}`, config);
  const accounts: Credentials[] = [];
  const endpoints: AddedEndpoint[] = [];
  for (let i = 0; i < webhooks.accounts; i++) {
    const credentials = await createAccountWithKey(box, `${name}-${i}@example.com`);
    accounts.push(credentials);
    if (name === 'with')
      endpoints.push(
        await airsJson<AddedEndpoint>(box, [
          'webhooks',
          'add',
          '--account',
          credentials.accountId,
          '--url',
          `${receiverUrl}/hooks/${i}`,
        ]),
      );
  }
  const airs = await startAirs(box, {
    cpus: context.cpus.server,
    nodeArgs: profileFlags(context, `webhooks-${name}`),
    processes: context.options.processes,
  });
  // The bench only reads through this store (the server writes).
  const store = openLmdbStore(box.dataDir);
  const stop = async () => {
    await store.close();
    await airs.child.stop('SIGTERM', 20_000);
  };
  // Each account of the webhooks side has its endpoint, enabled and at the receiver, before any load.
  for (const [i, account] of (name === 'with' ? accounts : []).entries()) {
    const found = await store.reads.webhookEndpointsOf(account.accountId);
    if (found.length !== 1 || found[0]?.status !== 'enabled' || found[0].url !== endpoints[i]?.url) {
      await stop();
      throw new Error(
        `account ${account.accountId} has endpoints ${JSON.stringify(found)}, expected one at the receiver`,
      );
    }
  }
  return { name, url: airs.url, pid: airs.child.pid, accounts, endpoints, store, stop };
};

/** One run on a side; `completions` gets the `at` of every request the run completed. */
const runOn = async (context: Context, side: Side, requests: number, label: string) => {
  const { webhooks } = context.options.sizes;
  const completions = new Map<string, number>();
  const [first] = side.accounts;
  if (first === undefined) throw new Error('no account');
  const run = await timeEndToEnd(context, {
    urls: [side.url],
    key: first.key,
    keys: side.accounts.map((account) => account.key),
    label,
    follower: lmdbFollower(side.store),
    onEvent: (event) => {
      if (event.type === 'RequestCompleted' && event.reqId !== undefined) completions.set(event.reqId, event.at);
    },
    sizes: { requests, warmup: 0, clients: webhooks.clients, timeoutSec: webhooks.timeoutSec },
  });
  if (run.failed > 0) throw new Error(`${label}: ${run.failed} requests failed`);
  return { run, completions };
};

/**
 * Waits until the receiver holds `expected` distinct deliveries, or none has come for `deliveryIdleSec`, or
 * `deliveryTimeoutSec` has passed; then 1 s more, so that a repeat sent right after shows up too.
 */
const awaitDeliveries = async (context: Context, receiver: Receiver, expected: number) => {
  const { webhooks } = context.options.sizes;
  const started = performance.now();
  let lastDistinct = -1;
  let lastProgress = started;
  for (;;) {
    const answer = await receiver.ask({ type: 'count' });
    const distinct = answer.type === 'count' ? answer.distinct : 0;
    const now = performance.now();
    if (distinct !== lastDistinct) {
      lastDistinct = distinct;
      lastProgress = now;
    }
    if (distinct >= expected) break;
    if (now - lastProgress > webhooks.deliveryIdleSec * 1000) break;
    if (now - started > webhooks.deliveryTimeoutSec * 1000) break;
    await sleep(100);
  }
  await sleep(1_000);
  const answer = await receiver.ask({ type: 'take' });
  if (answer.type !== 'take') throw new Error('the webhook receiver answered out of turn');
  return { receipts: answer.receipts, malformed: answer.malformed, waitedSec: (performance.now() - started) / 1000 };
};

/** The value below which `share` of the sorted values lie (nearest rank). */
const percentile = (sorted: readonly number[], share: number) =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number);

type DeliveryCheck = {
  readonly expected: number;
  readonly received: number;
  readonly repeated: number;
  readonly latenciesMs: readonly number[];
  readonly lastReceiptAt: number;
};

/** The deliveries of the requests in `completions`, from the receipts (one `request.completed` per request). */
const checkDeliveries = (completions: ReadonlyMap<string, number>, byRequest: ReadonlyMap<string, Receipt>) => {
  let received = 0;
  let repeated = 0;
  let lastReceiptAt = 0;
  const latenciesMs: number[] = [];
  for (const [reqId, completedAt] of completions) {
    const receipt = byRequest.get(reqId);
    if (receipt === undefined) continue;
    received++;
    if (receipt.count > 1) repeated++;
    latenciesMs.push(receipt.at - completedAt);
    lastReceiptAt = Math.max(lastReceiptAt, receipt.at);
  }
  latenciesMs.sort((a, b) => a - b);
  return { expected: completions.size, received, repeated, latenciesMs, lastReceiptAt } satisfies DeliveryCheck;
};

/** The poll answer of a request shows the completion time the latency starts from (in whole seconds). */
const checkCompletedAt = async (side: Side, reqId: string, at: number) => {
  for (const account of side.accounts) {
    const polled = await call(side.url, 'GET', `/v1/ai?req_id=${encodeURIComponent(reqId)}`, account.key);
    if (polled.status === 404) continue;
    const seconds = polled.body.completed_at;
    if (typeof seconds !== 'number' || Math.abs(seconds * 1000 - at) >= 1000)
      throw new Error(`${reqId} polls with completed_at ${String(seconds)}; its RequestCompleted is at ${at}`);
    return;
  }
  throw new Error(`${reqId} is unknown to every account of the ${side.name} side`);
};

type Round = {
  readonly side: SideName;
  readonly round: number;
  readonly run: EndToEndRun;
  readonly deliveries?: DeliveryCheck & { readonly waitedSec: number };
};

export const webhooksScenario = async (context: Context): Promise<ScenarioResult> => {
  const { webhooks } = context.options.sizes;
  const receiver = await startReceiver(context);
  const sides: Side[] = [];
  try {
    const without = await startSide(context, 'without', receiver.url);
    sides.push(without);
    const withHooks = await startSide(context, 'with', receiver.url);
    sides.push(withHooks);
    context.log(`  ${webhooks.accounts} accounts per server, an endpoint on each account of the webhooks side`);

    // Every request the webhooks side completed, for the exactly-once count (warm-up included).
    const allCompleted = new Map<string, number>();
    let malformed = 0;
    const deliveredNow = async (completions: ReadonlyMap<string, number>) => {
      for (const [reqId, at] of completions) allCompleted.set(reqId, at);
      const taken = await awaitDeliveries(context, receiver, allCompleted.size);
      malformed = taken.malformed;
      const byRequest = new Map(
        taken.receipts.filter((r) => r.type === 'request.completed').map((r) => [r.dataId, r] as const),
      );
      if (taken.receipts.length === 0)
        throw new Error(
          `0 of ${allCompleted.size} deliveries received (none within ${webhooks.deliveryIdleSec} s of the last completion): does this build send webhooks?`,
        );
      const unexpected = taken.receipts.filter((r) => !allCompleted.has(r.dataId)).length;
      return { ...checkDeliveries(completions, byRequest), waitedSec: taken.waitedSec, unexpected };
    };

    let warmupDeliveries: DeliveryCheck | undefined;
    for (const side of sides) {
      if (webhooks.warmup === 0) continue;
      context.log(`  ${side.name} webhooks: warm-up with ${webhooks.warmup} requests`);
      const warm = await runOn(context, side, webhooks.warmup, `${side.name} webhooks (warm-up)`);
      if (side.name === 'with') {
        const d = await deliveredNow(warm.completions);
        warmupDeliveries = d;
        context.log(`  warm-up deliveries: ${d.received} of ${d.expected} in ${round(d.waitedSec, 1)} s`);
      }
    }

    const rounds: Round[] = [];
    let unexpected = 0;
    for (let i = 0; i < webhooks.rounds; i++) {
      const order: SideName[] = i % 2 === 0 ? ['without', 'with'] : ['with', 'without'];
      for (const name of order) {
        const side = name === 'with' ? withHooks : without;
        await waitForIdle(side.pid, { timeoutMs: 30_000 });
        const { run, completions } = await runOn(context, side, webhooks.requests, `${name} webhooks`);
        let deliveries: Round['deliveries'];
        if (name === 'with') {
          const d = await deliveredNow(completions);
          unexpected = d.unexpected;
          deliveries = d;
          const [sample] = completions;
          if (sample !== undefined) await checkCompletedAt(side, sample[0], sample[1]);
        }
        rounds.push({ side: name, round: i + 1, run, ...(deliveries === undefined ? {} : { deliveries }) });
        context.log(
          `  ${name} webhooks, round ${i + 1}: ${run.jobs} in ${run.seconds} s (${run.jobsPerSec}/s)${
            deliveries === undefined
              ? ''
              : `; ${deliveries.received} of ${deliveries.expected} deliveries, ${deliveries.repeated} repeated, p50 ${percentile(deliveries.latenciesMs, 0.5)} ms, p99 ${percentile(deliveries.latenciesMs, 0.99)} ms`
          }`,
        );
      }
    }
    return report(context, rounds, { unexpected, malformed, warmupDeliveries });
  } finally {
    for (const side of sides) await side.stop();
    await receiver.child.stop('SIGTERM', 5_000);
  }
};

const mean = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

const report = (
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
    ]),
  );
  const notes = [
    `webhooks: two airs serve (LMDB, processing.concurrency 64, webhooks.allowHttp and allowPrivateNetworks on both), ${webhooks.accounts} enterprise accounts each with a key; on one, each account has an endpoint for every event type (airs webhooks add) at a bare node:http receiver on 127.0.0.1 answering 200 at once. ${webhooks.requests} echo requests per run from ${webhooks.clients} autocannon connections split over the keys, after an untimed warm-up of ${webhooks.warmup} on each server; runs alternate without, with, with, without; rate = requests / (first submit to last RequestCompleted), the mean of each side's runs. After each run with webhooks the bench waits for every delivery; latency = receipt (receiver clock) - the request's RequestCompleted time (server clock, same machine).`,
  ];
  return {
    name: 'webhooks',
    rows,
    notes,
    tables: [table],
    details: {
      rounds: rounds.map((r) => ({
        side: r.side,
        round: r.round,
        run: r.run,
        toLastDeliveryPerSec: toLastDelivery(r) ?? null,
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
      deliveries: { expected, received, repeated, unexpected: extra.unexpected, malformed: extra.malformed, p50, p99 },
    },
  };
};
