import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { indexReadsOf } from '../../storage/indexReads.js';
import { lapsedUploadsOf } from '../../storage/lapsedUploads.js';
import type { SyncReads } from '../../storage/syncReads.js';
import { webhookReadsOf } from '../../storage/webhookReads.js';
import { decodeMap, decodeRecord, decodeView } from './codec.js';
import { accountsVersionKey, type LmdbDatabases, lastSeqKey, requestKey } from './databases.js';
import { hourlyUsageRowsOf } from './hourlyUsage.js';
import { lmdbIndexes } from './indexes.js';
import { decodeLogRecord } from './logRecord.js';
import { tokenUseOf } from './tokenUse.js';

/** The store's reads from the current snapshot (storage/syncReads.ts), each view decoded from its record. */

/** The log in order from `fromSeq`, one record per batch unfolded into its events. */
function* eventsFrom(dbs: LmdbDatabases, fromSeq: number): Iterable<StoredEvent> {
  for (const { value } of dbs.log.getRange({ start: fromSeq })) {
    for (const event of decodeLogRecord(value)) if (event.seq >= fromSeq) yield event;
  }
}

export const lastSeqOf = (dbs: LmdbDatabases): number => dbs.meta.get(lastSeqKey) ?? 0;

export const decoded = <T>(bytes: Buffer | undefined, decode: (bytes: Uint8Array) => T): T | undefined =>
  bytes === undefined ? undefined : decode(bytes);

/** Webhook endpoints' and deliveries' views, read and written as MessagePack maps. */
export const webhookViewsOf = (dbs: LmdbDatabases) => ({
  webhookEndpoint: (endpointId: string) =>
    decoded(dbs.webhookEndpoints.getBinaryFast(endpointId), decodeMap<WebhookEndpointState>),
  webhookDelivery: (deliveryId: string) =>
    decoded(dbs.webhookDeliveries.getBinaryFast(deliveryId), decodeMap<DeliveryState>),
});

/** The reads written once over ordered indexes (storage/indexReads.ts), with the views as last committed. */
export const indexReadsFor = (dbs: LmdbDatabases) =>
  indexReadsOf(lmdbIndexes(dbs), {
    request: (reqId) => decoded(dbs.requests.getBinaryFast(requestKey(reqId)), decodeView),
    key: (keyId) => decoded(dbs.keys.getBinaryFast(keyId), decodeMap<KeyState>),
    dailyUsage: (accountId, day) => dbs.dailyUsage.get([accountId, day]),
  });

export const readsOf = (dbs: LmdbDatabases, indexReads: ReturnType<typeof indexReadsFor>): SyncReads => ({
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
