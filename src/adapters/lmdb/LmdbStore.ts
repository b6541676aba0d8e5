import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import { type Batch, type CommandOutcome, Store, type StoreShape } from '../../ports/Store.js';
import { readModelOf } from '../../storage/readModel.js';
import type { SyncReads } from '../../storage/syncReads.js';
import { webhookReadsOf } from '../../storage/webhookReads.js';
import { type BatchTarget, writeBatch } from '../../storage/writeBatch.js';
import type { RemoteWriter } from '../ipc/remoteWriter.js';
import {
  createCountChanges,
  createGroupChanges,
  createUsageChanges,
  createWaitingChanges,
  createWebhookViewChanges,
} from './batchChanges.js';
import { watchChanges } from './changes.js';
import { environmentFile, type LmdbDatabases, lastSeqKey, openDatabases } from './databases.js';
import { lmdbFileBytes } from './fileBytes.js';
import { createHourlyUsageChanges } from './hourlyUsage.js';
import { lmdbIndexes } from './indexes.js';
import { openLimits } from './limits.js';
import { encodeLogRecord } from './logRecord.js';
import { fileNotices } from './notices.js';
import { processOwners } from './processOwners.js';
import { classifyWriteError, guardAgainstLmdbCommitRejections } from './storageFault.js';
import { indexReadsFor, lastSeqOf, readsOf } from './syncReads.js';
import { viewsOf } from './viewAccess.js';
import { createWrittenStates } from './writtenStates.js';

/** Request states kept from one command to the next (see writtenStates.ts). */
const writtenStatesLimit = 20_000;

export type LmdbStore = StoreShape & {
  readonly databases: LmdbDatabases;
  /** The reads as they answer at once, from the current snapshot (verification, tests). */
  readonly syncReads: SyncReads;
};

export type LmdbStoreOptions = {
  /**
   * Commits go to a writer shared with the other processes of the data directory (`serve --processes N`: the
   * primary, adapters/ipc/remoteWriter.ts), which also says what changed: this process neither writes the log nor
   * watches the file. Reads stay here, on this process's snapshots.
   */
  readonly writer?: RemoteWriter;
  /** How long a webhook delivery is attempted before it gives up (default: 72 hours). */
  readonly webhookRetentionMs?: number | undefined;
};

/** Opens (creating if needed) the LMDB environment under `dataDir` as the product's Store. */
export const openLmdbStore = (dataDir: string, options: LmdbStoreOptions = {}): LmdbStore => {
  guardAgainstLmdbCommitRejections();
  const dbs = openDatabases(dataDir);
  const indexReads = indexReadsFor(dbs);
  const syncReads = readsOf(dbs, indexReads);
  const webhookRetentionMs = options.webhookRetentionMs ?? defaultWebhookBackoff.maxTotalMs;
  const limits = openLimits(dataDir);
  // The log's end as committed now, by anyone: a fresh snapshot first (the current one may be older).
  const changes = watchChanges(environmentFile(dataDir), () => {
    dbs.root.resetReadTxn();
    return lastSeqOf(dbs);
  });
  const writer = options.writer;
  writer?.setRefresh(() => dbs.root.resetReadTxn());
  const reads = readModelOf(syncReads, {
    limiterState: limits.state,
    onChange: writer === undefined ? changes.onChange : writer.onChange,
  });
  const written = createWrittenStates(writtenStatesLimit);
  const groups = createGroupChanges(dbs);
  const counts = {
    queued: createCountChanges(dbs.queuedCounts),
    processing: createCountChanges(dbs.processingCounts),
    account: createCountChanges(dbs.accountCounts),
  };
  const usage = createUsageChanges(dbs);
  const hourlyUsage = createHourlyUsageChanges(dbs);
  const waiting = createWaitingChanges(dbs);
  const webhookViews = createWebhookViewChanges(dbs);
  const views = viewsOf(dbs, written, groups, counts, usage, hourlyUsage, waiting, webhookViews);
  // The outbox reads an account's endpoints through the batch's own views (an endpoint added earlier in it counts).
  const batchWebhookReads = webhookReadsOf(lmdbIndexes(dbs).keys, {
    webhookEndpoint: webhookViews.getEndpoint,
    webhookDelivery: webhookViews.getDelivery,
  });
  const target: BatchTarget = {
    views,
    committedRequest: views.getRequest,
    // Reads made while a batch is written go through the open write transaction, so each command sees the ones
    // before it in the same batch.
    reads: {
      account: views.getAccount,
      key: views.getKey,
      accountIdByEmail: (email) => dbs.indexes.emails.get(email),
      session: views.getSession,
      sessionsOf: indexReads.sessionsOf,
      credential: (key) => dbs.credentials.get(key),
      idempotentRequest: (accountId, key) => dbs.indexes.idempotency.get([accountId, key]),
      queuedCount: counts.queued.committed,
      queuedAccounts: indexReads.queuedAccounts,
      queuedOf: indexReads.queuedOf,
      lapsedLeases: indexReads.lapsedLeases,
      processingCount: counts.processing.committed,
      accountCount: counts.account.committed,
      anyWaiting: waiting.committed,
      batch: views.getBatch,
      file: views.getFile,
      webhookEndpointsOf: batchWebhookReads.webhookEndpointsOf,
      webhookRetentionMs: () => webhookRetentionMs,
    },
    appendLog: (lastSeq, events) => {
      dbs.log.put(lastSeq, encodeLogRecord(events));
      dbs.meta.put(lastSeqKey, lastSeq);
    },
    flush: () => {
      groups.flush();
      counts.queued.flush();
      counts.processing.flush();
      counts.account.flush();
      usage.flush();
      hourlyUsage.flush();
      waiting.flush();
      webhookViews.flush();
    },
  };

  const commit = async (batch: Batch): Promise<readonly (CommandOutcome | Error)[]> => {
    let wrote: { from: number; to: number } | undefined;
    try {
      // One write transaction for the whole batch. It is a child transaction of lmdb-js's write batch so that a
      // fault while writing (not a refusal: those are values) aborts all of it rather than committing half; a batch
      // handed over while the previous one is being committed runs in the next transaction, or in the same one as
      // its own child. With overlappingSync off, the promise resolves only once the commit is synced to disk.
      const outcomes = await dbs.root.childTransaction(() => {
        try {
          // The sequence number is read once per batch, inside the write transaction: the CLI, writing to the same
          // environment from another process, can never take the same numbers.
          const lastSeq = lastSeqOf(dbs);
          written.beginBatch(lastSeq);
          const result = writeBatch(target, batch.commands, lastSeq);
          for (const { keyId, at } of batch.keyUses ?? []) dbs.keyLastUsed.put(keyId, at);
          written.wrote(result.lastSeq);
          wrote = { from: lastSeq, to: result.lastSeq };
          // What this commit appends is no change by another process (said before the commit can be seen).
          changes.wrote(lastSeq, result.lastSeq);
          return result.outcomes;
        } catch (error) {
          // This child transaction is rolled back: what it cached never happened, also for a batch that runs next
          // in the same transaction.
          written.failed();
          groups.clear();
          counts.queued.clear();
          counts.processing.clear();
          counts.account.clear();
          usage.clear();
          hourlyUsage.clear();
          waiting.clear();
          webhookViews.clear();
          throw error;
        }
      });
      return outcomes;
    } catch (error) {
      // The commit itself failed (an I/O error, a full disk): every batch in it is rolled back.
      if (wrote !== undefined) changes.unwrote(wrote.from);
      written.failed();
      throw await classifyWriteError(error);
    }
  };

  return {
    databases: dbs,
    syncReads,
    reads,
    ...(writer === undefined ? { commit } : { commit: writer.commit, sharedWriter: writer.changes }),
    spend: async (spends) => limits.spend(spends),
    throttle: limits.throttle,
    files: lmdbFileBytes(dbs),
    // Every process of a data directory is on this machine: it can tell which lease owners' processes are gone.
    owners: processOwners,
    notices: fileNotices(dataDir),
    close: async () => {
      changes.close();
      await limits.close();
      await dbs.root.close();
    },
  };
};

/** The Store as a layer: opened when the layer is built, closed when its scope ends. */
export const LmdbStoreLayer = (dataDir: string, options?: LmdbStoreOptions) =>
  Layer.effect(
    Store,
    Effect.acquireRelease(
      Effect.sync(() => openLmdbStore(dataDir, options)),
      (store) => Effect.promise(() => store.close()),
    ),
  );
