/** Where the projection reads and writes views (ViewAccess), and the indexes and groups it keeps. */
import type { AccountState, KeyState, SessionState } from '../domain/account/state.js';
import type { BatchView } from '../domain/batch/state.js';
import type { FileState } from '../domain/file/state.js';
import type { AccountUploads } from '../domain/file/uploads.js';
import type { RequestState } from '../domain/request/state.js';
import type { UsageRow } from '../domain/usage/hourlyUsage.js';
import type { DeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';

/** Secondary indexes with one entry per key. Keys are LMDB ordered keys (arrays sort element by element). */
export type IndexName =
  | 'dispatch'
  | 'accountRequests'
  | 'accountRequestsByKind'
  | 'emails'
  | 'keyHashes'
  | 'accountKeys'
  | 'accountSessions'
  | 'idempotency'
  | 'accountBatches'
  | 'accountFiles'
  | 'accountOpenBatches'
  | 'openBatchInputs'
  | 'accountFilesByPurpose'
  | 'accountWebhookEndpoints'
  | 'webhookDue'
  | 'endpointWebhookDeliveries';
export type IndexKey = string | number | (string | number)[];

/**
 * Grouped indexes: one entry per millisecond, holding the sorted ids of the requests that belong there. Requests
 * arrive and settle in bursts that share milliseconds, so a batch rewrites a few groups instead of writing and
 * deleting one entry per request.
 * - `expiry`: requests not expired yet, by the time the sweeper has to act on them next: their expiry, or their
 *   deadline (`Cancel-After`) while they are queued or processing and it comes first (expiryGroupOf);
 * - `processing`: requests being worked on, by the end of their attempt's lease (what another worker may take over
 *   once it has lapsed).
 */
export type GroupName = 'expiry' | 'processing';

/**
 * Where the projection reads and writes views. LMDB implements it inside the write transaction of a batch;
 * `airs replay --verify` rebuilds the account side in memory with it.
 */
export interface ViewAccess {
  getRequest(reqId: string): RequestState | undefined;
  /** Writes a request's view with the text it holds from now on (`text` absent: whatever it held before, if its new
   * status keeps text at all). */
  putRequest(reqId: string, state: RequestState, text?: string): void;
  getAccount(accountId: string): AccountState | undefined;
  putAccount(accountId: string, state: AccountState): void;
  getKey(keyId: string): KeyState | undefined;
  putKey(keyId: string, state: KeyState): void;
  getIndex(index: IndexName, key: IndexKey): string | undefined;
  /** Index values are strings; an index that only needs its keys stores ''. */
  putIndex(index: IndexName, key: IndexKey, value: string): void;
  removeIndex(index: IndexName, key: IndexKey): void;
  /** Moves a request from one group of a grouped index to another (`undefined`: not in the index). */
  moveInGroup(group: GroupName, reqId: string, from: number | undefined, to: number | undefined): void;
  /** Keeps a credential beside the views (a password's hash, a session secret's hash; `undefined` deletes it);
   * never part of a view or the log. */
  putCredential(key: string, value: string | undefined): void;
  getSession(sessionId: string): SessionState | undefined;
  /** Writes a session's view; `undefined` removes it (the session ended). */
  putSession(sessionId: string, state: SessionState | undefined): void;
  /** Counts account and key events: a reader that sees the count unchanged knows no account or key changed. */
  bumpAccountsVersion(): void;
  /** Changes how many of the account's interactive requests are waiting or being processed (what `maxQueued`
   * bounds: domain/queuedCounter.ts). */
  addQueued(accountId: string, delta: number): void;
  /** Adds a completed request's tokens to its account's usage of that day (UTC, `dayStartOf`). */
  addUsage(accountId: string, day: number, usage: DailyUsage): void;
  /** Adds a request's tokens (input and output) to its account's token buckets, as it ends at `at`
   * (domain/tokens/tokenUse.ts: what the token limits read), pruning the buckets no submit reads any more. */
  addTokens(accountId: string, at: number, tokens: number): void;
  /** Adds a completed request to its hour's row of the hourly usage view (storage/hourlyUsage.ts). */
  addHourlyUsage(row: UsageRow): void;
  /** Changes how many requests being processed count in a counter (domain/processingCounters.ts: per model, per
   * account, per account and model), in all processes (what their bounds limit). */
  addProcessing(counter: string, delta: number): void;
  /** Changes an account's counter (domain/accountCounters.ts: its open batches, the bytes of its files kept): what a
   * plan's `maxBatchesInProgress` and `maxFileStorageBytes` bound. Like the other counts, a change is read back by
   * the deciding of the same batch of commands only through writeBatch (the store's committed count is unchanged
   * until the batch is written). */
  addAccountCount(counter: string, delta: number): void;
  /** A batch's view (its state and its lines' counts). */
  getBatch(batchId: string): BatchView | undefined;
  putBatch(batchId: string, view: BatchView): void;
  /** A file's view; `undefined` removes it (deleted). */
  getFile(fileId: string): FileState | undefined;
  putFile(fileId: string, state: FileState | undefined): void;
  /** An account's uploads whose reservation has not ended (domain/file/uploads.ts); `undefined` removes the view. */
  getUploads(accountId: string): AccountUploads | undefined;
  putUploads(accountId: string, uploads: AccountUploads | undefined): void;
  /** A webhook endpoint's view (a removed one is kept: its deliveries must know it is gone). */
  getWebhookEndpoint(endpointId: string): WebhookEndpointState | undefined;
  putWebhookEndpoint(endpointId: string, state: WebhookEndpointState): void;
  /** A webhook delivery's view (the delivery machine's state). */
  getWebhookDelivery(deliveryId: string): DeliveryState | undefined;
  putWebhookDelivery(deliveryId: string, state: DeliveryState): void;
}

/** Tokens an account's completed requests read and wrote in one day. */
export type DailyUsage = { readonly inputTokens: number; readonly outputTokens: number };
