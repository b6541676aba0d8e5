import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import {
  applyTokenUseChange,
  createTokenUseChanges,
  type TokenBucket,
  type TokenBucketKind,
  type TokenUseChange,
} from '../../domain/tokens/tokenUse.js';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { type Batch, type CommandOutcome, Store, type StoreShape } from '../../ports/Store.js';
import { indexReadsOf } from '../../storage/indexReads.js';
import { lapsedUploadsOf } from '../../storage/lapsedUploads.js';
import type { DailyUsage, GroupName, ViewAccess } from '../../storage/projection.js';
import { readModelOf } from '../../storage/readModel.js';
import type { SyncReads } from '../../storage/syncReads.js';
import { webhookReadsOf } from '../../storage/webhookReads.js';
import { type BatchTarget, writeBatch } from '../../storage/writeBatch.js';
import type { RemoteWriter } from '../ipc/remoteWriter.js';
import { watchChanges } from './changes.js';
import {
  decodeIds,
  decodeMap,
  decodeRecord,
  decodeView,
  encodeIds,
  encodeMap,
  encodeRecord,
  holdsText,
  textBytesOf,
} from './codec.js';
import {
  accountsVersionKey,
  environmentFile,
  type LmdbDatabases,
  lastSeqKey,
  openDatabases,
  requestKey,
} from './databases.js';
import { lmdbFileBytes } from './fileBytes.js';
import { createHourlyUsageChanges, hourlyUsageRowsOf } from './hourlyUsage.js';
import { lmdbIndexes } from './indexes.js';
import { openLimits } from './limits.js';
import { decodeLogRecord, encodeLogRecord } from './logRecord.js';
import { waitingCountKey } from './migrations.js';
import { fileNotices } from './notices.js';
import { processOwners } from './processOwners.js';
import { classifyWriteError, guardAgainstLmdbCommitRejections } from './storageFault.js';
import { createWrittenStates } from './writtenStates.js';

/** The log in order from `fromSeq`, one record per batch unfolded into its events. */
function* eventsFrom(dbs: LmdbDatabases, fromSeq: number): Iterable<StoredEvent> {
  for (const { value } of dbs.log.getRange({ start: fromSeq })) {
    for (const event of decodeLogRecord(value)) if (event.seq >= fromSeq) yield event;
  }
}

const lastSeqOf = (dbs: LmdbDatabases): number => dbs.meta.get(lastSeqKey) ?? 0;

const decoded = <T>(bytes: Buffer | undefined, decode: (bytes: Uint8Array) => T): T | undefined =>
  bytes === undefined ? undefined : decode(bytes);

/** Webhook endpoints' and deliveries' views, read and written as MessagePack maps. */
const webhookViewsOf = (dbs: LmdbDatabases) => ({
  webhookEndpoint: (endpointId: string) =>
    decoded(dbs.webhookEndpoints.getBinaryFast(endpointId), decodeMap<WebhookEndpointState>),
  webhookDelivery: (deliveryId: string) =>
    decoded(dbs.webhookDeliveries.getBinaryFast(deliveryId), decodeMap<DeliveryState>),
});

/** The reads written once over ordered indexes (storage/indexReads.ts), with the views as last committed. */
const indexReadsFor = (dbs: LmdbDatabases) =>
  indexReadsOf(lmdbIndexes(dbs), {
    request: (reqId) => decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeView),
    key: (keyId) => decoded(dbs.keys.getBinaryFast(keyId), decodeMap<KeyState>),
    dailyUsage: (accountId, day) => dbs.dailyUsage.get([accountId, day]),
  });

/**
 * Webhook views as one batch reads and changes them: each decoded once and written once, at the batch's end. A
 * delivery is read by its command's deciding and again by the projection of each of its events, and its endpoint
 * by every delivery's: decoding the same MessagePack maps over and over cost more than the rest of their writes.
 */
const createWebhookViewChanges = (dbs: LmdbDatabases) => {
  const direct = webhookViewsOf(dbs);
  type Entry<V> = { state: V | undefined; changed: boolean };
  const endpoints = new Map<string, Entry<WebhookEndpointState>>();
  const deliveries = new Map<string, Entry<DeliveryState>>();
  const through =
    <V>(cache: Map<string, Entry<V>>, read: (id: string) => V | undefined) =>
    (id: string): V | undefined => {
      let entry = cache.get(id);
      if (entry === undefined) {
        entry = { state: read(id), changed: false };
        cache.set(id, entry);
      }
      return entry.state;
    };
  const clear = () => {
    endpoints.clear();
    deliveries.clear();
  };
  return {
    getEndpoint: through(endpoints, direct.webhookEndpoint),
    putEndpoint: (id: string, state: WebhookEndpointState) => void endpoints.set(id, { state, changed: true }),
    getDelivery: through(deliveries, direct.webhookDelivery),
    putDelivery: (id: string, state: DeliveryState) => void deliveries.set(id, { state, changed: true }),
    /** Writes what the batch changed, inside its transaction, and forgets the rest (the next batch reads afresh). */
    flush: () => {
      for (const [id, { state, changed }] of endpoints)
        if (changed && state !== undefined) dbs.webhookEndpoints.put(id, encodeMap(state));
      for (const [id, { state, changed }] of deliveries)
        if (changed && state !== undefined) dbs.webhookDeliveries.put(id, encodeMap(state));
      clear();
    },
    clear,
  };
};

const readsOf = (dbs: LmdbDatabases, indexReads: ReturnType<typeof indexReadsFor>): SyncReads => ({
  ...webhookViewsOf(dbs),
  ...webhookReadsOf(lmdbIndexes(dbs).keys, webhookViewsOf(dbs)),
  // Every read over the ordered indexes, as storage/indexReads.ts writes it once for every adapter.
  ...indexReads,
  refresh: () => dbs.root.resetReadTxn(),
  request: (reqId) => decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeView),
  requestWithText: (reqId) => decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeRecord),
  account: (accountId) => decoded(dbs.accounts.getBinaryFast(accountId), decodeMap<AccountState>),
  accountIdByEmail: (email) => dbs.indexes.emails.get(email),
  idempotentRequest: (accountId, key) => dbs.indexes.idempotency.get([accountId, key]),
  accounts: () => dbs.accounts.getRange({}).map(({ value }) => decodeMap<AccountState>(value)),
  key: (keyId) => decoded(dbs.keys.getBinaryFast(keyId), decodeMap<KeyState>),
  keyIdByHash: (keyHash) => dbs.indexes.keyHashes.get(keyHash),
  events: (fromSeq = 1) => eventsFrom(dbs, fromSeq),
  lastSeq: () => lastSeqOf(dbs),
  accountsVersion: () => dbs.meta.get(accountsVersionKey) ?? 0,
  credential: (key) => dbs.credentials.get(key),
  session: (sessionId) => decoded(dbs.sessions.getBinaryFast(sessionId), decodeMap<SessionState>),
  keyLastUsed: (keyId) => dbs.keyLastUsed.get(keyId),
  batch: (batchId) => decoded(dbs.batches.getBinaryFast(batchId), decodeMap<BatchView>),
  file: (fileId) => decoded(dbs.files.getBinaryFast(fileId), decodeMap<FileState>),
  processingCount: (counter) => dbs.processingCounts.get(counter) ?? 0,
  accountCount: (counter) => dbs.accountCounts.get(counter) ?? 0,
  uploadsOf: (accountId) => decoded(dbs.uploads.getBinaryFast(accountId), decodeMap<AccountUploads>) ?? [],
  lapsedUploads: (now, limit) =>
    lapsedUploadsOf(
      dbs.uploads.getRange({}).map(({ key, value }) => ({ accountId: key, uploads: decodeMap<AccountUploads>(value) })),
      now,
      limit,
    ),
  tokenUse: (accountId) => tokenUseOf(dbs, accountId),
  usageRows: hourlyUsageRowsOf(dbs),
});

type WrittenStates = ReturnType<typeof createWrittenStates>;

/** What a batch changes in the groups of the grouped indexes, written once per group when the batch ends. */
const createGroupChanges = (dbs: LmdbDatabases) => {
  const changes: Record<GroupName, Map<number, { added: string[]; removed: Set<string> }>> = {
    expiry: new Map(),
    processing: new Map(),
  };
  const of = (group: GroupName, key: number) => {
    let change = changes[group].get(key);
    if (change === undefined) {
      change = { added: [], removed: new Set() };
      changes[group].set(key, change);
    }
    return change;
  };
  return {
    move(group: GroupName, reqId: string, from: number | undefined, to: number | undefined) {
      if (from !== undefined) of(group, from).removed.add(reqId);
      if (to !== undefined) of(group, to).added.push(reqId);
    },
    /** Inside the batch's transaction, after its last request: one read and one write per group touched. */
    flush() {
      for (const group of ['expiry', 'processing'] as const) {
        const db = dbs.groups[group];
        for (const [key, { added, removed }] of changes[group]) {
          const stored = db.getBinaryFast(key);
          const kept = stored === undefined ? [] : decodeIds(stored).filter((reqId) => !removed.has(reqId));
          const ids = kept.length === 0 ? added : [...kept, ...added];
          if (ids.length === 0) db.remove(key);
          else db.put(key, encodeIds(ids.sort()));
        }
        changes[group].clear();
      }
    },
    clear() {
      changes.expiry.clear();
      changes.processing.clear();
    },
  };
};

/** Changes of a count view (by account, by model) in a batch, written once per key when the batch ends. */
const createCountChanges = (db: LmdbDatabases['queuedCounts']) => {
  const deltas = new Map<string, number>();
  return {
    add: (key: string, delta: number) => void deltas.set(key, (deltas.get(key) ?? 0) + delta),
    /** The count as committed before this batch. */
    committed: (key: string) => db.get(key) ?? 0,
    flush() {
      for (const [key, delta] of deltas) {
        if (delta === 0) continue;
        const count = (db.get(key) ?? 0) + delta;
        if (count === 0) db.remove(key);
        else db.put(key, count);
      }
      deltas.clear();
    },
    clear: () => deltas.clear(),
  };
};

/** Usage added in a batch, per account and day, written once per pair when the batch ends; and the tokens added to
 * each account's token buckets, written once per account and bucket (old buckets pruned). */
const createUsageChanges = (dbs: LmdbDatabases) => {
  const added = new Map<string, { accountId: string; day: number; input: number; output: number }>();
  const tokens = createTokenUseChanges();
  return {
    addTokens: tokens.add,
    add: (accountId: string, day: number, usage: DailyUsage) => {
      const key = `${accountId}\u0000${day}`;
      const entry = added.get(key) ?? { accountId, day, input: 0, output: 0 };
      entry.input += usage.inputTokens;
      entry.output += usage.outputTokens;
      added.set(key, entry);
    },
    flush() {
      for (const { accountId, day, input, output } of added.values()) {
        const [storedInput, storedOutput] = dbs.dailyUsage.get([accountId, day]) ?? [0, 0];
        dbs.dailyUsage.put([accountId, day], [storedInput + input, storedOutput + output]);
      }
      added.clear();
      for (const change of tokens.changes()) writeTokenUse(dbs, change);
      tokens.clear();
    },
    clear: () => {
      added.clear();
      tokens.clear();
    },
  };
};

/** Adds a write's tokens to an account's buckets and drops those no submit reads any more: one record per account. */
const writeTokenUse = (dbs: LmdbDatabases, change: TokenUseChange): void => {
  const buckets = applyTokenUseChange(tokenUseOf(dbs, change.accountId), change);
  dbs.tokenUse.put(
    change.accountId,
    buckets.map(({ kind, start, tokens }) => [kind, start, tokens]),
  );
};

/** An account's token buckets, read in one get. */
const tokenUseOf = (dbs: LmdbDatabases, accountId: string): TokenBucket[] =>
  (dbs.tokenUse.get(accountId) ?? []).map(([kind, start, tokens]) => ({
    kind: kind as TokenBucketKind,
    start,
    tokens,
  }));

/** Entries added to and removed from the dispatch index in a batch: its count (`waitingCountKey`), written once. */
const createWaitingChanges = (dbs: LmdbDatabases) => {
  let delta = 0;
  return {
    add(change: number) {
      delta += change;
    },
    /** Whether any request waits, as committed before this batch. */
    committed: () => (dbs.meta.get(waitingCountKey) ?? 0) > 0,
    flush() {
      if (delta !== 0) dbs.meta.put(waitingCountKey, (dbs.meta.get(waitingCountKey) ?? 0) + delta);
      delta = 0;
    },
    clear() {
      delta = 0;
    },
  };
};

/** The projection's view access, writing through the open transaction. */
const viewsOf = (
  dbs: LmdbDatabases,
  written: WrittenStates,
  groups: ReturnType<typeof createGroupChanges>,
  counts: { readonly queued: CountChanges; readonly processing: CountChanges; readonly account: CountChanges },
  usage: ReturnType<typeof createUsageChanges>,
  hourlyUsage: ReturnType<typeof createHourlyUsageChanges>,
  waiting: ReturnType<typeof createWaitingChanges>,
  webhooks: ReturnType<typeof createWebhookViewChanges>,
): ViewAccess => ({
  getRequest: (reqId) => written.get(reqId) ?? decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeView),
  putRequest: (reqId, state, text) => {
    written.set(reqId, state);
    // A request that keeps its text through this change (a start, a retry) carries it over from its record.
    const key = requestKey(reqId);
    const kept =
      text === undefined && holdsText(state.status) ? decoded(dbs.requests.getBinaryFast(key), textBytesOf) : text;
    dbs.requests.put(key, encodeRecord(state, kept));
  },
  getAccount: (accountId) => decoded(dbs.accounts.getBinaryFast(accountId), decodeMap<AccountState>),
  putAccount: (accountId, state) => void dbs.accounts.put(accountId, encodeMap(state)),
  getKey: (keyId) => decoded(dbs.keys.getBinaryFast(keyId), decodeMap<KeyState>),
  putKey: (keyId, state) => void dbs.keys.put(keyId, encodeMap(state)),
  getIndex: (index, key) => dbs.indexes[index].get(key),
  putIndex: (index, key, value) => {
    dbs.indexes[index].put(key, value);
    if (index === 'dispatch') waiting.add(1);
  },
  removeIndex: (index, key) => {
    dbs.indexes[index].remove(key);
    if (index === 'dispatch') waiting.add(-1);
  },
  moveInGroup: groups.move,
  putCredential: (key, value) =>
    void (value === undefined ? dbs.credentials.remove(key) : dbs.credentials.put(key, value)),
  getSession: (sessionId) => decoded(dbs.sessions.getBinaryFast(sessionId), decodeMap<SessionState>),
  putSession: (sessionId, state) =>
    void (state === undefined ? dbs.sessions.remove(sessionId) : dbs.sessions.put(sessionId, encodeMap(state))),
  bumpAccountsVersion: () => void dbs.meta.put(accountsVersionKey, (dbs.meta.get(accountsVersionKey) ?? 0) + 1),
  addQueued: counts.queued.add,
  addProcessing: counts.processing.add,
  addAccountCount: counts.account.add,
  addUsage: usage.add,
  addTokens: usage.addTokens,
  addHourlyUsage: hourlyUsage.add,
  getBatch: (batchId) => decoded(dbs.batches.getBinaryFast(batchId), decodeMap<BatchView>),
  putBatch: (batchId, view) => void dbs.batches.put(batchId, encodeMap(view)),
  getFile: (fileId) => decoded(dbs.files.getBinaryFast(fileId), decodeMap<FileState>),
  putFile: (fileId, state) =>
    void (state === undefined ? dbs.files.remove(fileId) : dbs.files.put(fileId, encodeMap(state))),
  getUploads: (accountId) => decoded(dbs.uploads.getBinaryFast(accountId), decodeMap<AccountUploads>),
  putUploads: (accountId, uploads) =>
    void (uploads === undefined ? dbs.uploads.remove(accountId) : dbs.uploads.put(accountId, encodeMap(uploads))),
  getWebhookEndpoint: webhooks.getEndpoint,
  putWebhookEndpoint: webhooks.putEndpoint,
  getWebhookDelivery: webhooks.getDelivery,
  putWebhookDelivery: webhooks.putDelivery,
});

type CountChanges = ReturnType<typeof createCountChanges>;

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
