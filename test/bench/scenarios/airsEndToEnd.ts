/**
 * End to end through airs: N echo requests submitted by C concurrent clients (autocannon connections, each
 * awaiting its 202 before the next), timed from the first submit until the last request is completed.
 *
 * Completion is read from the service's own log, not by polling: the clients only submit; the bench follows the
 * event log through the project's store API, opened beside the running server (LMDB allows it; the bench only
 * reads), until every request queued by the run has its `RequestCompleted`, and takes the time carried by the
 * last of those events. Polling 100k requests over HTTP would add load the BullMQ side does not have.
 */
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { authHeaders, call, createAccountWithKey, sandbox, startAirs } from '../airs.js';
import { type Context, profileFlags } from '../context.js';
import { type LoadResult, runLoad } from '../load.js';
import type { Child } from '../processes.js';

export type EndToEndRun = {
  readonly jobs: number;
  readonly seconds: number;
  readonly jobsPerSec: number;
  /** Submission alone: until the last request was queued (airs: its RequestQueued; BullMQ: the last add returned). */
  readonly submitSeconds: number;
  readonly completed: number;
  readonly failed: number;
  readonly load?: LoadResult;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const prompt = 'hello';

export const airsEndToEnd = async (context: Context): Promise<EndToEndRun> => {
  const { e2e } = context.options.sizes;
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
  const store = openLmdbStore(box.dataDir);
  // Newer stores serve reads from a lazily renewed snapshot; ask for a fresh one where that is possible.
  const refresh = () => (store.reads as { refresh?: () => void }).refresh?.();
  try {
    const submit = (amount: number) =>
      runLoad(
        {
          url: airs.url,
          method: 'POST',
          path: '/v1/ai',
          headers: authHeaders(credentials.key, true),
          body: JSON.stringify({ model: 'echo', prompt }),
          connections: e2e.clients,
          amount,
        },
        context.cpus.load,
        e2e.timeoutSec * 1000,
      );
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
        refresh();
        for (const event of store.syncReads.events(next)) {
          next = event.seq + 1;
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
        await sleep(20);
      }
      throw new Error(`airs: only ${tally.completed + tally.failed} of ${expected} requests settled within the bound`);
    };

    context.log(`  airs: warm-up with ${e2e.warmup} requests`);
    const warmupFrom = store.syncReads.lastSeq() + 1;
    await submit(e2e.warmup);
    await follow(warmupFrom, e2e.warmup, performance.now() + e2e.timeoutSec * 1000);

    refresh();
    const timedFrom = store.syncReads.lastSeq() + 1;
    const started = performance.now();
    context.log(`  airs: ${e2e.requests} requests from ${e2e.clients} clients`);
    const load = await submit(e2e.requests);
    if (load.non2xx > 0 || load.errors > 0) {
      throw new Error(
        `airs answered ${load.non2xx} non-2xx and ${load.errors} errors: ${JSON.stringify(load.statusCodes)}`,
      );
    }
    const { queued, completed, failed, lastQueuedAt, lastCompletedAt, sampleId } = await follow(
      timedFrom,
      e2e.requests,
      started + e2e.timeoutSec * 1000,
    );
    if (queued !== e2e.requests) throw new Error(`the log holds ${queued} new requests, expected ${e2e.requests}`);
    if (sampleId !== undefined) {
      const polled = await call(airs.url, 'GET', `/v1/ai?req_id=${sampleId}`, credentials.key);
      if (polled.body.status !== 'completed' || polled.body.response !== prompt) {
        throw new Error(`a completed request does not poll as completed: ${JSON.stringify(polled.body)}`);
      }
    }
    const seconds = (lastCompletedAt - load.startedAt) / 1000;
    return {
      jobs: e2e.requests,
      seconds: Math.round(seconds * 1000) / 1000,
      jobsPerSec: Math.round(e2e.requests / seconds),
      submitSeconds: (lastQueuedAt - load.startedAt) / 1000,
      completed,
      failed,
      load,
    };
  } finally {
    await store.close();
    await Promise.all(children.map((child) => child.stop('SIGTERM', 20_000)));
  }
};
