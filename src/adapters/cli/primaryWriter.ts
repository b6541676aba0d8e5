import type { Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { encodeError, encodeOutcome } from '../ipc/outcomeCodec.js';
import { type CommitAnswer, type CommitRequest, type Committed, isCommitRequest } from '../ipc/protocol.js';
import type { LmdbStore } from '../lmdb/LmdbStore.js';

/** Commits handed to LMDB before the first is durable: it writes the next while the disk flushes the last. */
const maxInFlight = 2;

type Received = { readonly worker: Worker; readonly request: CommitRequest };

/**
 * The one writer of a data directory under `serve --processes N` on LMDB: the primary. Server processes send their
 * batches here (adapters/ipc/remoteWriter.ts); every batch that arrived in one event-loop turn, from any process, goes
 * into one `store.commit` (one transaction, one flush: group commit), in the order received, each batch's commands in
 * their order. Once durable, every process hears one message for the commit: the answers to its batches in it, and
 * the commit's summary (app/processing/wakeups.ts), computed here once instead of a re-read in every process.
 *
 * The store is opened once the first server process has started (serveMany.ts), or at a batch that comes sooner:
 * by then that process has created or migrated it. A batch of a process that died meanwhile still commits, whole;
 * its answer goes nowhere. A write from outside the server's processes (an `airs` command) is heard through the file
 * watcher and told to every process.
 */
export const createPrimaryWriter = (
  dataDir: string,
  log: Logger,
  options: { readonly webhookRetentionMs?: number | undefined } = {},
) => {
  const workers = new Set<Worker>();
  let store: LmdbStore | undefined;
  let stopHearing: (() => void) | undefined;
  let received: Received[] = [];
  let scheduled = false;
  let inFlight = 0;
  const idleWaiters: (() => void)[] = [];

  const open = async (): Promise<LmdbStore> => {
    if (store !== undefined) return store;
    const { openLmdbStore } = await import('../lmdb/LmdbStore.js');
    store ??= openLmdbStore(dataDir, options);
    stopHearing ??= store.reads.onChange(() => {
      const changed = { airs: 'changed' } as const;
      for (const worker of workers) if (worker.isConnected()) worker.send(changed, undefined, () => {});
    });
    return store;
  };

  const schedule = () => {
    if (scheduled || inFlight >= maxInFlight || received.length === 0) return;
    scheduled = true;
    setImmediate(() => void turn());
  };

  const settleIdle = () => {
    if (received.length === 0 && inFlight === 0) for (const done of idleWaiters.splice(0)) done();
  };

  const tell = (answersOf: (worker: Worker) => CommitAnswer[], summary?: Committed['summary']) => {
    for (const worker of workers) {
      const answers = answersOf(worker);
      // A process that has nothing in a failed commit has nothing to hear of it.
      if (summary === undefined && answers.length === 0) continue;
      if (!worker.isConnected()) continue;
      const message: Committed = { airs: 'committed', answers, summary };
      worker.send(message, undefined, () => {});
    }
  };

  const turn = async () => {
    scheduled = false;
    const group = received;
    received = [];
    inFlight++;
    const commands = group.flatMap(({ request }) => request.commands);
    const keyUses = group.flatMap(({ request }) => request.keyUses ?? []);
    const answersFor = (worker: Worker, answer: (entry: Received, index: number) => CommitAnswer) =>
      group.flatMap((entry, index) => (entry.worker === worker ? [answer(entry, index)] : []));
    try {
      const opened = await open();
      const outcomes = await opened.commit({ commands, ...(keyUses.length === 0 ? {} : { keyUses }) });
      const { summaryOf } = await import('../../app/processing/wakeups.js');
      const starts: number[] = [];
      let at = 0;
      for (const { request } of group) {
        starts.push(at);
        at += request.commands.length;
      }
      log.debug(
        { commands: commands.length, batches: group.length, processes: new Set(group.map((e) => e.worker)).size },
        'group commit',
      );
      tell(
        (worker) =>
          answersFor(worker, ({ request }, index) => {
            const start = starts[index] ?? 0;
            return {
              id: request.id,
              outcomes: outcomes.slice(start, start + request.commands.length).map(encodeOutcome),
            };
          }),
        summaryOf(outcomes),
      );
    } catch (error) {
      // Nothing of the commit was written: every batch in it fails, each process hears of its own.
      log.error({ err: error, commands: commands.length }, 'a group commit failed');
      const failed = encodeError(error);
      tell((worker) => answersFor(worker, ({ request }) => ({ id: request.id, failed })));
    } finally {
      inFlight--;
      schedule();
      settleIdle();
    }
  };

  return {
    /** Opens the store now (once the first server process has created or migrated it), so that a write from outside
     * is heard even before any process sends a batch. */
    open: async () => void (await open()),
    /** Takes the batches of a server process just forked. */
    attach(worker: Worker) {
      workers.add(worker);
      worker.on('message', (message: unknown) => {
        if (!isCommitRequest(message)) return;
        received.push({ worker, request: message });
        schedule();
      });
      worker.on('exit', () => workers.delete(worker));
    },
    /** Once every batch received is committed: closes the store. */
    close: async () => {
      if (received.length > 0 || inFlight > 0) await new Promise<void>((resolve) => idleWaiters.push(resolve));
      stopHearing?.();
      await store?.close();
    },
  };
};
