import type { AccountState, KeyState, SessionState } from '../domain/account/state.js';
import type { BatchView } from '../domain/batch/state.js';
import type { QueuedEntry } from '../domain/claimFairly.js';
import type { StoredEvent } from '../domain/events.js';
import type { FileState } from '../domain/file/state.js';
import type { AccountUploads } from '../domain/file/uploads.js';
import type { RequestState } from '../domain/request/state.js';
import type { TokenBucket } from '../domain/tokens/tokenUse.js';
import type { UsageRow } from '../domain/usage/hourlyUsage.js';
import type { DeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';
import type {
  DailyTokens,
  DeliveryPage,
  DueDeliveries,
  DueDeliveriesAsk,
  LapsedUpload,
  ListName,
  ListPage,
  OpenBatch,
  RequestPage,
  StoredRequest,
  UsageRange,
  WebhookBacklog,
} from '../ports/Store.js';

/**
 * The reads of a store that can answer at once (LMDB's memory map, the in-memory store), as of its current read
 * snapshot. The read model (readModel.ts) is made of them; `replay --verify`, the migrations and the storage-neutral
 * helpers (dueWork.ts, queueDepths.ts) use them directly.
 */
export interface SyncReads {
  /** Makes the following reads see everything committed up to now, also by other processes. */
  refresh(): void;
  request(reqId: string): RequestState | undefined;
  requestWithText(reqId: string): StoredRequest | undefined;
  account(accountId: string): AccountState | undefined;
  accountIdByEmail(email: string): string | undefined;
  idempotentRequest(accountId: string, key: string): string | undefined;
  accounts(): Iterable<AccountState>;
  key(keyId: string): KeyState | undefined;
  keyIdByHash(keyHash: string): string | undefined;
  keysOf(accountId: string): KeyState[];
  /** Accounts with requests waiting for a worker, in id order, starting after `after` and wrapping round to it. */
  queuedAccounts(after: string | undefined): Iterable<string>;
  /** An account's requests waiting for a worker, earliest availability first. */
  queuedOf(accountId: string): Iterable<QueuedEntry>;
  dueForExpiry(now: number, limit: number): string[];
  /** Ids of the requests being processed. */
  processing(): string[];
  /** Up to `limit` requests being processed whose lease lapsed at or before `now`, earliest lapse first. */
  lapsedLeases(now: number, limit: number): string[];
  /** The earliest end of a lease after `after` (ms), if any request is being processed under one. */
  nextLeaseEnd(after: number): number | undefined;
  events(fromSeq?: number): Iterable<StoredEvent>;
  lastSeq(): number;
  accountsVersion(): number;
  credential(key: string): string | undefined;
  session(sessionId: string): SessionState | undefined;
  requestsOf(accountId: string, page: RequestPage): RequestState[];
  requestCountsByHour(accountId: string, fromMs: number, hours: number): number[];
  usageByDay(accountId: string, fromDay: number, days: number): DailyTokens[];
  tokenUse(accountId: string): TokenBucket[];
  usageRows(range: UsageRange): UsageRow[];
  keyLastUsed(keyId: string): number | undefined;
  batch(batchId: string): BatchView | undefined;
  file(fileId: string): FileState | undefined;
  listOf(list: ListName, accountId: string, page: ListPage): string[];
  openBatches(limit: number): OpenBatch[];
  openBatchAccounts(after: string | undefined, limit: number): string[];
  openBatchesOf(accountId: string, after: string | undefined, limit: number): string[];
  isOpenBatchInput(fileId: string): boolean;
  processingCount(counter: string): number;
  accountCount(counter: string): number;
  uploadsOf(accountId: string): AccountUploads;
  lapsedUploads(now: number, limit: number): LapsedUpload[];
  webhookEndpoint(endpointId: string): WebhookEndpointState | undefined;
  webhookEndpointsOf(accountId: string): WebhookEndpointState[];
  webhookDelivery(deliveryId: string): DeliveryState | undefined;
  webhookDeliveriesOf(endpointId: string, page: DeliveryPage): DeliveryState[];
  dueWebhookDeliveries(now: number, ask: DueDeliveriesAsk): DueDeliveries;
  webhookBacklog(endpointId: string, limit: number): WebhookBacklog;
}
