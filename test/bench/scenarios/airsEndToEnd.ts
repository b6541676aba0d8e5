/**
 * End to end through airs: N echo requests submitted by C concurrent clients (autocannon connections, each
 * awaiting its 202 before the next), timed from the first submit until the last request is completed.
 *
 * Completion is read from the service's own log, not by polling: the clients only submit; the bench follows the
 * event log until every request queued by the run has its `RequestCompleted`, and takes the time carried by the
 * last of those events. On LMDB it reads through the project's store API, opened beside the running server (LMDB
 * allows it; the bench only reads); on PostgreSQL (the pg scenario) it reads the events table, a page of new rows per
 * look. Polling 100k requests over HTTP would add load the baselines do not have.
 */
import type { LmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { authHeaders, call, createAccountWithKey, openAirsLmdbStore, sandbox, startAirs } from '../airs.js';
import { type Context, profileFlags } from '../context.js';
import { type CpuMeter, type CpuUse, microsPer, processTree, startCpuMeter } from '../cpuTime.js';
import { type LoadResult, runLoad } from '../load.js';
import type { Sizes } from '../options.js';
import type { Child } from '../processes.js';
import { waitForIdleAll } from '../procfs.js';

export type EndToEndRun = {
  readonly jobs: number;
  readonly seconds: number;
  readonly jobsPerSec: number;
  /** Submission alone: until the last request was queued (airs: its RequestQueued; BullMQ: the last add returned). */
  readonly submitSeconds: number;
  readonly completed: number;
  readonly failed: number;
  /** When the first submit went out (epoch ms, the clock of the log's events), where the run knows it. */
  readonly startedAt?: number;
  /** The submitting loads (one per airs node). */
  readonly load?: LoadResult | readonly LoadResult[];
  /** The servers' CPU time from the first submit until the last request was seen settled, where they were named. */
  readonly cpu?: CpuUse;
  /** `cpu` over the requests, in µs. */
  readonly cpuUsPerRequest?: number;
};

/** What the bench needs of a log event. */
export type LogEntry = { readonly seq: number; readonly type: string; readonly at: number; readonly reqId?: string };

/** Reads an airs log as it grows. */
export type LogFollower = {
  /** The sequence number of the last event committed. */
  lastSeq(): Promise<number>;
  /** Events from `fromSeq` on, in order (all of them, or a page: the next call goes on after the last one). */
  read(fromSeq: number): Promise<readonly LogEntry[]>;
  /** Pause after each look. */
  readonly pauseMs: number;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const prompt = 'hello';

/** The airs nodes to submit to (the load is split evenly between them), one key, and the log of their store. */
export type EndToEndTarget = {
  readonly urls: readonly string[];
  readonly key: string;
  readonly follower: LogFollower;
  /** For messages: `airs`, `airs-pg`... */
  readonly label: string;
  /** Keys of more accounts: the load is then split evenly over every node and every key (`key` is the first). */
  readonly keys?: readonly string[];
  /** Sees every event followed (warm-up and timed run): the webhooks scenario takes completion times from it. */
  readonly onEvent?: (event: LogEntry) => void;
  /** Sizes other than the e2e scenario's (the webhooks scenario's; a warm-up of 0 skips it). */
  readonly sizes?: Partial<Sizes['e2e']>;
  /**
   * The server processes: when named, the timed run starts once they are idle (the warm-up and anything before it
   * done), and their CPU time over it is measured.
   */
  readonly cpuOf?: () => readonly number[];
  /** Gets the timed run's CPU meter as it starts, to read it again later (after the webhooks' deliveries). */
  readonly onMeter?: (meter: CpuMeter) => void;
};

/** Warm-up, then the timed run, against airs servers already started. */
export const timeEndToEnd = async (context: Context, target: EndToEndTarget): Promise<EndToEndRun> => {
  const e2e = { ...context.options.sizes.e2e, ...target.sizes };
  const { urls, key, follower, label } = target;
  const keys = target.keys ?? [key];
  const lanes = urls.flatMap((url) => keys.map((laneKey) => ({ url, key: laneKey })));
  const submitTo = (url: string, laneKey: string, amount: number, connections: number, onSend?: () => void) =>
    runLoad(
      {
        url,
        method: 'POST',
        path: '/v1/ai',
        headers: authHeaders(laneKey, true),
        body: JSON.stringify({ model: 'echo', prompt }),
        connections,
        amount,
      },
      context.cpus.load,
      e2e.timeoutSec * 1000,
      onSend,
    );
  /**
   * `amount` requests from `e2e.clients` clients, shared evenly by the nodes (and the keys); `onSend` is called as
   * each share is handed to the load generator.
   */
  const submit = async (amount: number, onSend?: () => void) => {
    const loads = await Promise.all(
      lanes.map((lane, i) => {
        const share = Math.floor(amount / lanes.length) + (i < amount % lanes.length ? 1 : 0);
        const clients = Math.floor(e2e.clients / lanes.length) + (i < e2e.clients % lanes.length ? 1 : 0);
        return submitTo(lane.url, lane.key, share, Math.max(1, clients), onSend);
      }),
    );
    for (const load of loads) {
      if (load.non2xx > 0 || load.errors > 0) {
        throw new Error(
          `${label} answered ${load.non2xx} non-2xx and ${load.errors} errors: ${JSON.stringify(load.statusCodes)}`,
        );
      }
    }
    return loads;
  };
  /**
   * Follows the log from `fromSeq` until `expected` requests queued there have settled (completed or failed), or
   * until the bound. Each look reads only the events appended since the previous one.
   */
  const follow = async (fromSeq: number, expected: number, deadline: number) => {
    const tally = {
      queued: 0,
      completed: 0,
      failed: 0,
      lastQueuedAt: 0,
      lastCompletedAt: 0,
      sampleId: undefined as string | undefined,
    };
    let next = fromSeq;
    while (performance.now() < deadline) {
      const events = await follower.read(next);
      for (const event of events) {
        next = event.seq + 1;
        target.onEvent?.(event);
        if (event.type === 'RequestQueued') {
          tally.queued++;
          tally.lastQueuedAt = Math.max(tally.lastQueuedAt, event.at);
          tally.sampleId ??= event.reqId;
        } else if (event.type === 'RequestCompleted') {
          tally.completed++;
          tally.lastCompletedAt = Math.max(tally.lastCompletedAt, event.at);
        } else if (event.type === 'RequestFailed') tally.failed++;
      }
      if (tally.completed + tally.failed >= expected) return tally;
      await sleep(follower.pauseMs);
    }
    throw new Error(
      `${label}: only ${tally.completed + tally.failed} of ${expected} requests settled within the bound`,
    );
  };

  if (e2e.warmup > 0) {
    context.log(`  ${label}: warm-up with ${e2e.warmup} requests`);
    const warmupFrom = (await follower.lastSeq()) + 1;
    await submit(e2e.warmup);
    await follow(warmupFrom, e2e.warmup, performance.now() + e2e.timeoutSec * 1000);
  }

  if (target.cpuOf !== undefined) {
    const idle = await waitForIdleAll(target.cpuOf, { timeoutMs: e2e.timeoutSec * 1000 });
    if (!idle.idle) context.log(`  ${label}: still busy ${idle.waitedMs} ms after the warm-up; measuring anyway`);
  }
  const timedFrom = (await follower.lastSeq()) + 1;
  // The meter starts as the first share is handed to the load generator.
  let meter: CpuMeter | undefined;
  const { cpuOf } = target;
  const onSend =
    cpuOf === undefined
      ? undefined
      : () => {
          if (meter !== undefined) return;
          meter = startCpuMeter(cpuOf);
          target.onMeter?.(meter);
        };
  const started = performance.now();
  context.log(
    `  ${label}: ${e2e.requests} requests from ${e2e.clients} clients${urls.length > 1 ? ` over ${urls.length} nodes` : ''}`,
  );
  const loads = await submit(e2e.requests, onSend);
  const startedAt = Math.min(...loads.map((load) => load.startedAt));
  const { queued, completed, failed, lastQueuedAt, lastCompletedAt, sampleId } = await follow(
    timedFrom,
    e2e.requests,
    started + e2e.timeoutSec * 1000,
  );
  const cpu = meter?.read();
  if (queued !== e2e.requests) throw new Error(`the log holds ${queued} new requests, expected ${e2e.requests}`);
  if (sampleId !== undefined) {
    // The sample is some account's: the first key that sees it (another account's request is unknown to a key).
    let polled = await call(urls[0] as string, 'GET', `/v1/ai?req_id=${sampleId}`, key);
    for (const other of keys.slice(1)) {
      if (polled.status !== 404) break;
      polled = await call(urls[0] as string, 'GET', `/v1/ai?req_id=${sampleId}`, other);
    }
    if (polled.body.status !== 'completed' || polled.body.response !== prompt) {
      throw new Error(`a completed request does not poll as completed: ${JSON.stringify(polled.body)}`);
    }
  }
  const seconds = (lastCompletedAt - startedAt) / 1000;
  return {
    jobs: e2e.requests,
    seconds: Math.round(seconds * 1000) / 1000,
    jobsPerSec: Math.round(e2e.requests / seconds),
    submitSeconds: (lastQueuedAt - startedAt) / 1000,
    completed,
    failed,
    startedAt,
    load: loads.length === 1 ? loads[0] : loads,
    ...(cpu === undefined ? {} : { cpu, cpuUsPerRequest: microsPer(cpu, e2e.requests) }),
  };
};

/** Follows the log of an LMDB store opened beside a running server (read only). */
export const lmdbFollower = (store: LmdbStore): LogFollower => {
  // Newer stores serve reads from a lazily renewed snapshot; ask for a fresh one where that is possible.
  const refresh = () => (store.reads as { refresh?: () => void }).refresh?.();
  return {
    pauseMs: 20,
    lastSeq: async () => {
      refresh();
      return store.syncReads.lastSeq();
    },
    read: async (fromSeq) => {
      refresh();
      const events: LogEntry[] = [];
      for (const event of store.syncReads.events(fromSeq)) {
        events.push({
          seq: event.seq,
          type: event.type,
          at: event.at,
          ...('reqId' in event ? { reqId: event.reqId } : {}),
        });
      }
      return events;
    },
  };
};

/** airs on LMDB (the e2e scenario): its own data directory, one server. */
export const airsEndToEnd = async (context: Context): Promise<EndToEndRun> => {
  const children: Child[] = [];
  const box = sandbox(context.workDir, 'e2e-airs');
  const credentials = await createAccountWithKey(box);
  const airs = await startAirs(box, {
    cpus: context.cpus.server,
    nodeArgs: profileFlags(context, 'e2e'),
    processes: context.options.processes,
  });
  children.push(airs.child);
  // The bench only reads through this store (the server writes); it runs on the load CPUs.
  const store = await openAirsLmdbStore(box.dataDir);
  try {
    return await timeEndToEnd(context, {
      urls: [airs.url],
      key: credentials.key,
      label: 'airs',
      follower: lmdbFollower(store),
      cpuOf: () => processTree(airs.child.pid),
    });
  } finally {
    await store.close();
    await Promise.all(children.map((child) => child.stop('SIGTERM', 20_000)));
  }
};
