import * as Layer from 'effect/Layer';
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import { holdsText } from '../../domain/request/retention.js';
import type { RequestState } from '../../domain/request/state.js';
import {
  applyTokenUseChange,
  bucketStartAt,
  type TokenBucket,
  tokenBucketKinds,
} from '../../domain/tokens/tokenUse.js';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { type Batch, type CommandOutcome, Store, type StoreShape } from '../../ports/Store.js';
import { addedUsage, readUsageRows, type StoredUsage, usageKeyOf } from '../../storage/hourlyUsage.js';
import { indexReadsOf } from '../../storage/indexReads.js';
import { lapsedUploadsOf } from '../../storage/lapsedUploads.js';
import type { GroupName, IndexKey, IndexName, ViewAccess } from '../../storage/projection.js';
import { readModelOf } from '../../storage/readModel.js';
import { spendAll } from '../../storage/spend.js';
import type { SyncReads } from '../../storage/syncReads.js';
import {
  forgetThrottleKey,
  maxThrottleKeys,
  pruneThrottleKeys,
  releaseThrottlePlace,
  reserveThrottlePlace,
  scopedKeys,
  type ThrottleEntry,
  type ThrottleExpiryIndex,
  type ThrottleTable,
} from '../../storage/throttleCounts.js';
import { webhookReadsOf } from '../../storage/webhookReads.js';
import { type BatchTarget, writeBatch } from '../../storage/writeBatch.js';
import { memoryFileBytes } from './fileBytes.js';
import { memoryIndexes } from './indexes.js';
import { compareKeys, type OrderedMap, orderedMap } from './orderedMap.js';

/**
 * The Store in memory: the same deciding and projection as LMDB (storage/writeBatch.ts, projection.ts) over sorted
 * maps, for tests that need no disk (the liveness simulation, fast app tests). A commit is one synchronous step:
 * decided against everything committed before it, applied whole or, if writing throws, not at all. Nothing survives
 * the process.
 */

type Stored = { readonly state: RequestState; readonly text: string | undefined };

export type MemoryStore = StoreShape & {
  /** The reads as they answer at once (tests). */
  readonly syncReads: SyncReads;
  /** Commits made so far (each one batch). */
  readonly commits: () => number;
  /** Throttle keys kept now (what their bound and pruning are about). */
  readonly throttleKeyCount: () => number;
};

export type MemoryStoreOptions = {
  /** How long a webhook delivery is attempted before it gives up (default: 72 hours). */
  readonly webhookRetentionMs?: number | undefined;
  /** Most throttle keys kept at once (default: `maxThrottleKeys`; tests of the bound give a small one). */
  readonly maxThrottleKeys?: number | undefined;
};

export const openMemoryStore = (options: MemoryStoreOptions = {}): MemoryStore => {
  const webhookRetentionMs = options.webhookRetentionMs ?? defaultWebhookBackoff.maxTotalMs;
  const maxKeys = options.maxThrottleKeys ?? maxThrottleKeys;
  const log: StoredEvent[] = [];
  const requests = new Map<string, Stored>();
  const accounts = orderedMap<AccountState>();
  const keys = new Map<string, KeyState>();
  const sessions = new Map<string, SessionState>();
  const credentials = new Map<string, string>();
  const limiter = new Map<string, number>();
  const keyLastUsed = new Map<string, number>();
  const queuedCounts = new Map<string, number>();
  const processingCounts = new Map<string, number>();
  const accountCounts = new Map<string, number>();
  /** Changes of accounts' counters in the batch being written: applied at its end, as the other stores write them
   * (writeBatch reads the committed count and adds what the batch did so far). */
  const accountCountChanges = new Map<string, number>();
  const dailyUsage = new Map<string, readonly [number, number]>();
  /** Each account's token buckets (domain/tokens/tokenUse.ts). */
  const tokenUse = new Map<string, readonly TokenBucket[]>();
  const hourlyUsage = orderedMap<StoredUsage>();
  const batches = new Map<string, BatchView>();
  const files = new Map<string, FileState>();
  const uploads = new Map<string, AccountUploads>();
  const webhookEndpoints = new Map<string, WebhookEndpointState>();
  const webhookDeliveries = new Map<string, DeliveryState>();
  const indexes: Record<IndexName, OrderedMap<string>> = {
    dispatch: orderedMap(),
    accountRequests: orderedMap(),
    accountRequestsByKind: orderedMap(),
    emails: orderedMap(),
    keyHashes: orderedMap(),
    accountKeys: orderedMap(),
    idempotency: orderedMap(),
    accountSessions: orderedMap(),
    accountBatches: orderedMap(),
    accountFiles: orderedMap(),
    accountOpenBatches: orderedMap(),
    openBatchInputs: orderedMap(),
    accountFilesByPurpose: orderedMap(),
    accountWebhookEndpoints: orderedMap(),
    webhookDue: orderedMap(),
    endpointWebhookDeliveries: orderedMap(),
  };
  const groups: Record<GroupName, OrderedMap<ReadonlySet<string>>> = {
    expiry: orderedMap(),
    processing: orderedMap(),
  };
  let accountsVersion = 0;
  let commits = 0;

  /** What a commit changed, undone in reverse if it throws part-way. */
  let undo: (() => void)[] = [];
  const setIn = <K, V>(map: { get(k: K): V | undefined; set(k: K, v: V): unknown; delete(k: K): unknown }) => {
    return (key: K, value: V | undefined) => {
      const before = map.get(key);
      undo.push(() => (before === undefined ? map.delete(key) : map.set(key, before)));
      if (value === undefined) map.delete(key);
      else map.set(key, value);
    };
  };
  const putRequestRecord = setIn<string, Stored>(requests);
  const putAccount = setIn<IndexKey, AccountState>(accounts);
  const putKey = setIn<string, KeyState>(keys);
  const putSession = setIn<string, SessionState>(sessions);
  const putCredential = setIn<string, string>(credentials);
  const putQueuedCount = setIn<string, number>(queuedCounts);
  const putProcessingCount = setIn<string, number>(processingCounts);
  const putAccountCount = setIn<string, number>(accountCounts);
  const putDailyUsage = setIn<string, readonly [number, number]>(dailyUsage);
  const putTokenUse = setIn<string, readonly TokenBucket[]>(tokenUse);
  const putHourlyUsage = setIn<IndexKey, StoredUsage>(hourlyUsage);
  const putBatch = setIn<string, BatchView>(batches);
  const putFile = setIn<string, FileState>(files);
  const putUploads = setIn<string, AccountUploads>(uploads);
  const putWebhookEndpoint = setIn<string, WebhookEndpointState>(webhookEndpoints);
  const putWebhookDelivery = setIn<string, DeliveryState>(webhookDeliveries);
  const putIndex = (index: IndexName) => setIn<IndexKey, string>(indexes[index]);
  const putGroup = (group: GroupName) => setIn<IndexKey, ReadonlySet<string>>(groups[group]);

  const views: ViewAccess = {
    getRequest: (reqId) => requests.get(reqId)?.state,
    putRequest: (reqId, state, text) => {
      const kept = text ?? requests.get(reqId)?.text;
      putRequestRecord(reqId, { state, text: holdsText(state.status) ? kept : undefined });
    },
    getAccount: (accountId) => accounts.get(accountId),
    putAccount: (accountId, state) => putAccount(accountId, state),
    getKey: (keyId) => keys.get(keyId),
    putKey: (keyId, state) => putKey(keyId, state),
    getIndex: (index, key) => indexes[index].get(key),
    putIndex: (index, key, value) => putIndex(index)(key, value),
    removeIndex: (index, key) => putIndex(index)(key, undefined),
    moveInGroup: (group, reqId, from, to) => {
      const write = putGroup(group);
      if (from !== undefined) {
        const members = new Set<string>(groups[group].get(from));
        members.delete(reqId);
        write(from, members.size === 0 ? undefined : members);
      }
      if (to !== undefined) write(to, new Set<string>(groups[group].get(to)).add(reqId));
    },
    putCredential: (key, value) => putCredential(key, value),
    getSession: (sessionId) => sessions.get(sessionId),
    putSession: (sessionId, state) => putSession(sessionId, state),
    addUsage: (accountId, day, usage) => {
      const key = `${accountId}\u0000${day}`;
      const [input, output] = dailyUsage.get(key) ?? [0, 0];
      putDailyUsage(key, [input + usage.inputTokens, output + usage.outputTokens]);
    },
    addTokens: (accountId, at, tokens) => {
      if (tokens <= 0) return;
      const added = tokenBucketKinds.map((kind) => ({ kind, start: bucketStartAt(kind, at), tokens }));
      putTokenUse(accountId, applyTokenUseChange(tokenUse.get(accountId) ?? [], { added, latestAt: at }));
    },
    addHourlyUsage: (row) => {
      const key = usageKeyOf(row);
      putHourlyUsage(key, addedUsage(hourlyUsage.get(key), row));
    },
    addQueued: (accountId, delta) => {
      const count = (queuedCounts.get(accountId) ?? 0) + delta;
      putQueuedCount(accountId, count === 0 ? undefined : count);
    },
    addProcessing: (model, delta) => {
      const count = (processingCounts.get(model) ?? 0) + delta;
      putProcessingCount(model, count === 0 ? undefined : count);
    },
    addAccountCount: (counter, delta) =>
      void accountCountChanges.set(counter, (accountCountChanges.get(counter) ?? 0) + delta),
    getBatch: (batchId) => batches.get(batchId),
    putBatch: (batchId, view) => putBatch(batchId, view),
    getFile: (fileId) => files.get(fileId),
    putFile: (fileId, state) => putFile(fileId, state),
    getUploads: (accountId) => uploads.get(accountId),
    putUploads: (accountId, state) => putUploads(accountId, state),
    getWebhookEndpoint: (endpointId) => webhookEndpoints.get(endpointId),
    putWebhookEndpoint: (endpointId, state) => putWebhookEndpoint(endpointId, state),
    getWebhookDelivery: (deliveryId) => webhookDeliveries.get(deliveryId),
    putWebhookDelivery: (deliveryId, state) => putWebhookDelivery(deliveryId, state),
    bumpAccountsVersion: () => {
      const before = accountsVersion;
      undo.push(() => {
        accountsVersion = before;
      });
      accountsVersion++;
    },
  };

  const ordered = memoryIndexes(indexes, groups);
  const indexReads = indexReadsOf(ordered, {
    request: (reqId) => requests.get(reqId)?.state,
    key: (keyId) => keys.get(keyId),
    dailyUsage: (accountId, day) => dailyUsage.get(`${accountId}\u0000${day}`),
  });
  const webhookReads = webhookReadsOf(ordered.keys, {
    webhookEndpoint: (id) => webhookEndpoints.get(id),
    webhookDelivery: (id) => webhookDeliveries.get(id),
  });

  const target: BatchTarget = {
    views,
    committedRequest: views.getRequest,
    reads: {
      batch: views.getBatch,
      file: views.getFile,
      account: views.getAccount,
      key: views.getKey,
      accountIdByEmail: (email) => indexes.emails.get(email),
      session: views.getSession,
      sessionsOf: indexReads.sessionsOf,
      credential: (key) => credentials.get(key),
      idempotentRequest: (accountId, key) => indexes.idempotency.get([accountId, key]),
      queuedCount: (accountId) => queuedCounts.get(accountId) ?? 0,
      queuedAccounts: indexReads.queuedAccounts,
      queuedOf: indexReads.queuedOf,
      lapsedLeases: indexReads.lapsedLeases,
      processingCount: (model) => processingCounts.get(model) ?? 0,
      accountCount: (counter) => accountCounts.get(counter) ?? 0,
      anyWaiting: () => indexes.dispatch.size > 0,
      webhookEndpointsOf: webhookReads.webhookEndpointsOf,
      webhookRetentionMs: () => webhookRetentionMs,
    },
    appendLog: (_lastSeq, events) => {
      const length = log.length;
      undo.push(() => {
        log.length = length;
      });
      log.push(...events);
    },
    flush: () => {
      for (const [counter, delta] of accountCountChanges) {
        const count = (accountCounts.get(counter) ?? 0) + delta;
        if (delta !== 0) putAccountCount(counter, count === 0 ? undefined : count);
      }
      accountCountChanges.clear();
    },
  };

  /** Everyone who shares this store hears of every commit that appended (it cannot tell writers apart). */
  const listeners = new Set<() => void>();
  const tell = () => {
    for (const listener of listeners) listener();
  };
  const commit = async (batch: Batch): Promise<readonly (CommandOutcome | Error)[]> => {
    undo = [];
    accountCountChanges.clear();
    try {
      const before = log.length;
      const { outcomes } = writeBatch(target, batch.commands, log.length);
      for (const { keyId, at } of batch.keyUses ?? []) keyLastUsed.set(keyId, at);
      commits++;
      if (log.length !== before && listeners.size > 0) setImmediate(tell);
      return outcomes;
    } catch (error) {
      for (const step of undo.reverse()) step();
      throw error;
    } finally {
      undo = [];
    }
  };

  const syncReads: SyncReads = {
    // Every read over the ordered indexes, as storage/indexReads.ts writes it once for every adapter.
    ...indexReads,
    refresh: () => {},
    batch: (batchId) => batches.get(batchId),
    file: (fileId) => files.get(fileId),
    processingCount: (counter) => processingCounts.get(counter) ?? 0,
    accountCount: (counter) => accountCounts.get(counter) ?? 0,
    uploadsOf: (accountId) => uploads.get(accountId) ?? [],
    lapsedUploads: (now, limit) =>
      lapsedUploadsOf(
        Array.from(uploads, ([accountId, held]) => ({ accountId, uploads: held })),
        now,
        limit,
      ),
    webhookEndpoint: (endpointId) => webhookEndpoints.get(endpointId),
    webhookDelivery: (deliveryId) => webhookDeliveries.get(deliveryId),
    ...webhookReads,
    request: (reqId) => requests.get(reqId)?.state,
    requestWithText: (reqId) => requests.get(reqId),
    account: (accountId) => accounts.get(accountId),
    accountIdByEmail: (email) => indexes.emails.get(email),
    idempotentRequest: (accountId, key) => indexes.idempotency.get([accountId, key]),
    accounts: () => accounts.valuesArray(),
    key: (keyId) => keys.get(keyId),
    keyIdByHash: (keyHash) => indexes.keyHashes.get(keyHash),
    events: (fromSeq = 1) => log.slice(Math.max(0, fromSeq - 1)),
    lastSeq: () => log.length,
    accountsVersion: () => accountsVersion,
    credential: (key) => credentials.get(key),
    session: (sessionId) => sessions.get(sessionId),
    keyLastUsed: (keyId) => keyLastUsed.get(keyId),
    tokenUse: (accountId) => [...(tokenUse.get(accountId) ?? [])],
    usageRows: (range) =>
      readUsageRows(range, function* (start, end) {
        for (const [key, value] of hourlyUsage.entries(start as IndexKey)) {
          if (compareKeys(key, end as IndexKey) >= 0) return;
          yield { key: key as (number | string)[], value };
        }
      }),
  };

  // Throttle keys, and the same keys in the order they leave their window (what pruning reads), as LMDB keeps them.
  const throttleEntries = new Map<string, ThrottleEntry>();
  const throttleKeysByExpiry = orderedMap<''>();
  const throttleTable: ThrottleTable = {
    get: (key) => throttleEntries.get(key),
    put: (key, entry, before) => {
      if (before !== undefined) throttleKeysByExpiry.delete([before.expiresAt, key]);
      throttleEntries.set(key, entry);
      throttleKeysByExpiry.set([entry.expiresAt, key], '');
    },
    remove: (key, before) => {
      throttleKeysByExpiry.delete([before.expiresAt, key]);
      throttleEntries.delete(key);
    },
  };
  const throttleExpiryIndex: ThrottleExpiryIndex = {
    size: () => throttleEntries.size,
    soonest: function* (limit) {
      let count = 0;
      for (const key of throttleKeysByExpiry.keys()) {
        if (count++ >= limit) return;
        yield key as [number, string];
      }
    },
    drop: (key, expiresAt) => {
      throttleKeysByExpiry.delete([expiresAt, key]);
      throttleEntries.delete(key);
    },
  };
  const limiterState = (accountId: string, budget: string) => limiter.get(`${accountId}\u0000${budget}`);
  const reads = readModelOf(syncReads, {
    limiterState,
    onChange: (listener) => {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  });
  return {
    reads,
    syncReads,
    commit,
    throttle: {
      reserve: async (ask) => {
        pruneThrottleKeys(throttleExpiryIndex, ask.now, scopedKeys(ask), maxKeys);
        return reserveThrottlePlace(ask, throttleTable);
      },
      release: async (place) => releaseThrottlePlace(place, throttleTable),
      forget: async (scope, key) => forgetThrottleKey(scope, key, throttleTable),
    },
    spend: async (spends) =>
      spendAll(spends, {
        get: limiterState,
        put: (accountId, budget, tat) => void limiter.set(`${accountId}\u0000${budget}`, tat),
      }),
    files: memoryFileBytes(),
    close: async () => {},
    commits: () => commits,
    throttleKeyCount: () => throttleEntries.size,
  };
};

/** The in-memory Store as a layer (tests: `storeLayer` in the app's options). */
export const MemoryStoreLayer = (store: StoreShape = openMemoryStore()) => Layer.succeed(Store, store);
