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
import type { LmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import {
  airsJson,
  benchConfig,
  type Credentials,
  call,
  createAccountWithKey,
  openAirsLmdbStore,
  sandbox,
  startAirs,
} from '../airs.js';
import { type Context, profileFlags, type ScenarioResult } from '../context.js';
import { type CpuMeter, type CpuUse, microsPer, processTree } from '../cpuTime.js';
import { script } from '../paths.js';
import { type Child, startChild } from '../processes.js';
import { waitForIdleAll } from '../procfs.js';
import { round } from '../stats.js';
import type { Receipt, ReceiverAnswer, ReceiverAsk } from '../webhookReceiver.js';
import { lmdbFollower, timeEndToEnd } from './airsEndToEnd.js';
import { type DeliveryCheck, percentile, type Round, report, type SideName } from './webhooksReport.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

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
  readonly store: LmdbStore;
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
  const store = await openAirsLmdbStore(box.dataDir);
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

/**
 * One run on a side; `completions` gets the `at` of every request the run completed, `meter` is the server's CPU
 * meter started with the timed run (still running: the deliveries are read from it later).
 */
const runOn = async (context: Context, side: Side, requests: number, label: string) => {
  const { webhooks } = context.options.sizes;
  const completions = new Map<string, number>();
  const [first] = side.accounts;
  if (first === undefined) throw new Error('no account');
  let meter: CpuMeter | undefined;
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
    cpuOf: () => processTree(side.pid),
    onMeter: (started) => {
      meter = started;
    },
  });
  if (run.failed > 0) throw new Error(`${label}: ${run.failed} requests failed`);
  return { run, completions, meter };
};

/**
 * Waits until the receiver holds `expected` distinct deliveries, or none has come for `deliveryIdleSec`, or
 * `deliveryTimeoutSec` has passed; then 1 s more, so that a repeat sent right after shows up too.
 */
const awaitDeliveries = async (
  context: Context,
  receiver: Receiver,
  expected: number,
  /** Called once, when the last of the `expected` deliveries has arrived. */
  onAllArrived?: () => void,
) => {
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
    if (distinct >= expected) {
      onAllArrived?.();
      break;
    }
    if (now - lastProgress > webhooks.deliveryIdleSec * 1000) break;
    if (now - started > webhooks.deliveryTimeoutSec * 1000) break;
    await sleep(100);
  }
  await sleep(1_000);
  const answer = await receiver.ask({ type: 'take' });
  if (answer.type !== 'take') throw new Error('the webhook receiver answered out of turn');
  return { receipts: answer.receipts, malformed: answer.malformed, waitedSec: (performance.now() - started) / 1000 };
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
    const deliveredNow = async (completions: ReadonlyMap<string, number>, onAllArrived?: () => void) => {
      for (const [reqId, at] of completions) allCompleted.set(reqId, at);
      const taken = await awaitDeliveries(context, receiver, allCompleted.size, onAllArrived);
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
        // Both servers idle (the other one's deliveries done too) before a run is measured.
        await waitForIdleAll(() => sides.flatMap((s) => processTree(s.pid)), { timeoutMs: 30_000 });
        const { run, completions, meter } = await runOn(context, side, webhooks.requests, `${name} webhooks`);
        let deliveries: Round['deliveries'];
        let cpuToDelivery: CpuUse | undefined;
        if (name === 'with') {
          const d = await deliveredNow(completions, () => {
            cpuToDelivery = meter?.read();
          });
          unexpected = d.unexpected;
          deliveries = d;
          const [sample] = completions;
          if (sample !== undefined) await checkCompletedAt(side, sample[0], sample[1]);
        }
        const cpuUs = {
          toCompletion: run.cpuUsPerRequest ?? Number.NaN,
          ...(cpuToDelivery === undefined ? {} : { toDelivery: microsPer(cpuToDelivery, run.jobs) }),
        };
        rounds.push({
          side: name,
          round: i + 1,
          run,
          cpuUs,
          ...(deliveries === undefined ? {} : { deliveries }),
          ...(cpuToDelivery === undefined ? {} : { cpuToDelivery }),
        });
        context.log(
          `  ${name} webhooks, round ${i + 1}: ${run.jobs} in ${run.seconds} s (${run.jobsPerSec}/s), CPU ${cpuUs.toCompletion} µs/req${cpuUs.toDelivery === undefined ? '' : ` (${cpuUs.toDelivery} to the last delivery)`}${
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
