import { adminKeysOwner, evolveAdminKey } from '../domain/account/adminKeys.js';
import type { AccountEvent } from '../domain/account/events.js';
import {
  type AccountState,
  evolveAccount,
  evolveKey,
  evolveSession,
  type KeyState,
  type SessionState,
} from '../domain/account/state.js';
import { accountCountsOfBatch, accountCountsOfFile, addCountChange } from '../domain/accountCounters.js';
import { type BatchView, isFinalBatch } from '../domain/batch/state.js';
import { dispatchLaneOf } from '../domain/dispatchLane.js';
import { type FileEvent, isUploadEvent } from '../domain/file/events.js';
import { evolveFile, type FileState } from '../domain/file/state.js';
import { type AccountUploads, evolveUploads } from '../domain/file/uploads.js';
import { counterMoves } from '../domain/processingCounters.js';
import { queuedDelta } from '../domain/queuedCounter.js';
import type { RequestState } from '../domain/request/state.js';
import type { UsageRow } from '../domain/usage/hourlyUsage.js';
import { type DeliveryState, evolveDelivery, initialDeliveryState } from '../domain/webhook/delivery.js';
import { evolveEndpoint, type WebhookEndpointState } from '../domain/webhook/endpoint.js';
import { isWebhookDeliveryEvent, type WebhookEvent } from '../domain/webhook/events.js';
import type { RequestKind } from '../ports/Store.js';
import { projectHourlyUsage } from './hourlyUsage.js';
import { dayMs } from './timeBuckets.js';

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

/** The start (UTC midnight, ms) of the day `at` falls in: the bucket of `usageByDay` (timeBuckets.ts). */
export const dayStartOf = (at: number): number => Math.floor(at / dayMs) * dayMs;

/** The usage a request adds to its account's day when it completes, if its model told it. */
export const usageOf = (state: RequestState): { readonly day: number; readonly usage: DailyUsage } | undefined => {
  const { completedAt, inputTokens, outputTokens } = state.context;
  if (completedAt === undefined || inputTokens === undefined || outputTokens === undefined) return undefined;
  return { day: dayStartOf(completedAt), usage: { inputTokens, outputTokens } };
};

/**
 * A request waiting for a worker is in the dispatch index: grouped by lane (its account's, or its account's batch
 * lane for a batch's line: domain/batch/lines.ts), so workers can take lanes in turn, then by the time it becomes
 * available. The value is its model.
 */
export const dispatchKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'waiting'
    ? [dispatchLaneOf(state.context), state.context.availableAt, state.context.reqId]
    : undefined;

/** An account's batches, newest last: [accountId, createdAt, batchId] → ''. */
export const accountBatchKeyOf = (view: BatchView): IndexKey => [
  view.state.context.accountId,
  view.state.context.createdAt,
  view.state.context.batchId,
];
/** An account's files: [accountId, createdAt, fileId] → its purpose. */
export const accountFileKeyOf = (file: FileState): IndexKey => [file.accountId, file.createdAt, file.fileId];
/** An account's files of one purpose: [accountId, purpose, createdAt, fileId] → '' (what a list filtered by purpose
 * reads: only the rows it returns). */
export const filePurposeKeyOf = (file: FileState): IndexKey => [
  file.accountId,
  file.purpose,
  file.createdAt,
  file.fileId,
];

/**
 * A batch not ended among its account's open batches: [accountId, batchId] → ''. By account first, so that each server's
 * batch runner takes the accounts in turn (app/batches/openBatchTurns.ts) and one account's many batches hold back no
 * other's.
 */
export const accountOpenBatchKeyOf = (view: BatchView): IndexKey => [
  view.state.context.accountId,
  view.state.context.batchId,
];
/** A batch not ended by the file it reads: [inputFileId, batchId] → ''. Whether a file's bytes may go (a deleted
 * file's, an expired one's) is one seek, not a read of every open batch. */
export const openBatchInputKeyOf = (view: BatchView): IndexKey => [
  view.state.context.inputFileId,
  view.state.context.batchId,
];

/**
 * What a batch's change does to the views: its view, its entry among its account's batches (from its creation), and
 * until it ends its entries among its account's open batches and the open batches' input files, and in its account's
 * count of open batches.
 */
export const projectBatchChange = (views: ViewAccess, before: BatchView | undefined, after: BatchView): void => {
  const { batchId } = after.state.context;
  views.putBatch(batchId, after);
  if (before === undefined) views.putIndex('accountBatches', accountBatchKeyOf(after), '');
  const wasOpen = before !== undefined && !isFinalBatch(before.state.status);
  const isOpen = !isFinalBatch(after.state.status);
  if (!wasOpen && isOpen) {
    views.putIndex('accountOpenBatches', accountOpenBatchKeyOf(after), '');
    views.putIndex('openBatchInputs', openBatchInputKeyOf(after), '');
  }
  if (wasOpen && !isOpen) {
    views.removeIndex('accountOpenBatches', accountOpenBatchKeyOf(after));
    views.removeIndex('openBatchInputs', openBatchInputKeyOf(after));
  }
  addCountChange(
    (counter, delta) => views.addAccountCount(counter, delta),
    accountCountsOfBatch(before),
    accountCountsOfBatch(after),
  );
};

/** Applies a file event: its view, its entries among its account's files (all, and of its purpose; removed with it)
 * and its bytes and itself in its account's counts; or, for an upload's reservation, its account's uploads. */
export const projectFileEvent = (views: ViewAccess, event: FileEvent): void => {
  if (isUploadEvent(event)) {
    views.putUploads(event.accountId, evolveUploads(views.getUploads(event.accountId), event));
    return;
  }
  const before = views.getFile(event.fileId);
  const after = evolveFile(before, event);
  if (after === before) return;
  views.putFile(event.fileId, after);
  if (before !== undefined) {
    views.removeIndex('accountFiles', accountFileKeyOf(before));
    views.removeIndex('accountFilesByPurpose', filePurposeKeyOf(before));
  }
  if (after !== undefined) {
    views.putIndex('accountFiles', accountFileKeyOf(after), after.purpose);
    views.putIndex('accountFilesByPurpose', filePurposeKeyOf(after), '');
  }
  addCountChange(
    (counter, delta) => views.addAccountCount(counter, delta),
    accountCountsOfFile(before),
    accountCountsOfFile(after),
  );
};

/**
 * Every request of an account that has not expired, by the time it was made: what the dashboard lists (newest first,
 * paged) and counts per hour (by range counts, without reading the requests). Present from `RequestQueued` until
 * `RequestExpired`; the value is empty.
 */
export const accountRequestKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'none' || state.status === 'expired'
    ? undefined
    : [state.context.accountId, state.context.createdAt, state.context.reqId];

/** The same entry by kind, [accountId, kind, createdAt, reqId]: an account's interactive requests or its batches'
 * lines, page by page, without reading the other kind (the dashboard's Requests filter). */
export const accountRequestKindKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'none' || state.status === 'expired'
    ? undefined
    : [state.context.accountId, requestKindOf(state), state.context.createdAt, state.context.reqId];

/** A batch's line knows its batch; any other request was made on its own. */
export const requestKindOf = (state: RequestState): RequestKind =>
  state.context.batchId === undefined ? 'interactive' : 'batch';

/**
 * A request made with an `Idempotency-Key` is found by it: [accountId, key] → its id, from `RequestQueued` until it
 * expires. A key whose request has expired (or is older than the window) may make a new request, which then takes
 * the entry over; the expiry of the older one removes the entry only while it still names that one.
 */
export const idempotencyKeyOf = (state: RequestState): IndexKey | undefined =>
  state.context.idempotencyKey === undefined ? undefined : [state.context.accountId, state.context.idempotencyKey];

const isLive = (state: RequestState) => state.status !== 'none' && state.status !== 'expired';

const moveIdempotencyEntry = (views: ViewAccess, before: RequestState, after: RequestState) => {
  const key = idempotencyKeyOf(after);
  if (key === undefined) return;
  const reqId = after.context.reqId;
  if (!isLive(before) && isLive(after)) views.putIndex('idempotency', key, reqId);
  else if (isLive(before) && !isLive(after) && views.getIndex('idempotency', key) === reqId)
    views.removeIndex('idempotency', key);
};

/**
 * When the sweeper acts on a request next (`undefined`: never again): a queued or running one with a deadline before
 * its expiry is cancelled at the deadline; every other one is expired at its expiry. One index for both keeps the
 * sweeper's read one bounded read; a request without a deadline is where it always was (no store is rewritten).
 */
const expiryGroupOf = (state: RequestState): number | undefined => {
  const { status, context } = state;
  if (status === 'none' || status === 'expired') return undefined;
  const live = status === 'waiting' || status === 'processing';
  return live && context.deadlineAt !== undefined && context.deadlineAt < context.expiresAt
    ? context.deadlineAt
    : context.expiresAt;
};

/** The group of each grouped index a request in `state` belongs to, if any. */
export const groupOf: { readonly [G in GroupName]: (state: RequestState) => number | undefined } = {
  expiry: (state) => expiryGroupOf(state),
  // By the end of its attempt's lease (older requests, without one: by its start), so lapsed leases come first.
  processing: (state) =>
    state.status === 'processing' ? (state.context.leaseUntil ?? state.context.startedAt) : undefined,
};

const sameKey = (a: IndexKey | undefined, b: IndexKey | undefined): boolean => {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((part, i) => part === b[i]);
  return a === b;
};

const moveIndex = (
  views: ViewAccess,
  index: IndexName,
  from: IndexKey | undefined,
  to: IndexKey | undefined,
  value = '',
) => {
  if (sameKey(from, to)) return;
  if (from !== undefined) views.removeIndex(index, from);
  if (to !== undefined) views.putIndex(index, to, value);
};

const moveGroup = (views: ViewAccess, group: GroupName, before: RequestState, after: RequestState) => {
  const from = groupOf[group](before);
  const to = groupOf[group](after);
  if (from !== to) views.moveInGroup(group, after.context.reqId, from, to);
};

/**
 * What a request's move from `before` to `after` does to the views: its view (with its text: retention follows
 * from the new status, see codec.ts) and its index entries. Every index entry is a function of the request's state,
 * so one move over many events (a batch) leaves exactly what event-by-event moves would: the store calls this once
 * per request and batch.
 */
export const projectRequestChange = (
  views: ViewAccess,
  before: RequestState,
  after: RequestState,
  text?: string,
): void => {
  views.putRequest(after.context.reqId, after, text);
  moveIndex(views, 'dispatch', dispatchKeyOf(before), dispatchKeyOf(after), after.context.model);
  moveIndex(views, 'accountRequests', accountRequestKeyOf(before), accountRequestKeyOf(after));
  moveIndex(views, 'accountRequestsByKind', accountRequestKindKeyOf(before), accountRequestKindKeyOf(after));
  moveIdempotencyEntry(views, before, after);
  moveGroup(views, 'expiry', before, after);
  moveGroup(views, 'processing', before, after);
  const queued = queuedDelta(before, after);
  if (queued !== 0) views.addQueued(after.context.accountId, queued);
  if (before.status === 'processing' || after.status === 'processing')
    for (const [counter, delta] of counterMoves(before, after)) views.addProcessing(counter, delta);
  // Completed within this change (it may have expired in the same batch too).
  if (before.context.completedAt === undefined && after.context.completedAt !== undefined) {
    const used = usageOf(after);
    if (used !== undefined) {
      views.addUsage(after.context.accountId, used.day, used.usage);
      const { inputTokens, outputTokens } = used.usage;
      views.addTokens(after.context.accountId, after.context.completedAt, inputTokens + outputTokens);
    }
  }
  projectHourlyUsage(views, before, after);
};

/** Applies one account or key event to the views and indexes it touches. */
export const projectAccountEvent = (views: ViewAccess, event: AccountEvent): void => {
  // Sessions change no account or key: API key answers cached by `accountsVersion` stay current.
  if (event.type === 'SessionStarted' || event.type === 'SessionEnded') {
    views.putSession(event.sessionId, evolveSession(views.getSession(event.sessionId), event));
    // An account's sessions by [accountId, sessionId]: what a suspension or a new password ends, inside its write.
    if (event.type === 'SessionStarted') views.putIndex('accountSessions', [event.accountId, event.sessionId], '');
    else views.removeIndex('accountSessions', [event.accountId, event.sessionId]);
    return;
  }
  // What an admin key did is read from the log only (airs replay): no view changes.
  if (event.type === 'AdminActed') return;
  views.bumpAccountsVersion();
  if (event.type === 'AdminKeyCreated' || event.type === 'AdminKeyRevoked') {
    const key = evolveAdminKey(views.getKey(event.keyId), event);
    if (key !== undefined) views.putKey(event.keyId, key);
    if (event.type === 'AdminKeyCreated') {
      views.putIndex('keyHashes', event.keyHash, event.keyId);
      views.putIndex('accountKeys', [adminKeysOwner, event.keyId], '');
    }
    return;
  }
  const account = evolveAccount(views.getAccount(event.accountId), event);
  if (account !== undefined) views.putAccount(event.accountId, account);
  if (event.type === 'AccountCreated') views.putIndex('emails', event.email, event.accountId);
  if (
    event.type === 'ApiKeyCreated' ||
    event.type === 'ApiKeyNamed' ||
    event.type === 'ApiKeyExpiresAt' ||
    event.type === 'ApiKeyRevoked'
  ) {
    const key = evolveKey(views.getKey(event.keyId), event);
    if (key !== undefined) views.putKey(event.keyId, key);
  }
  if (event.type === 'ApiKeyCreated') {
    views.putIndex('keyHashes', event.keyHash, event.keyId);
    views.putIndex('accountKeys', [event.accountId, event.keyId], '');
  }
};

/** An account's webhook endpoints that are not removed, oldest first: [accountId, createdAt, endpointId] → ''. */
export const accountWebhookEndpointKeyOf = (state: WebhookEndpointState): IndexKey => [
  state.accountId,
  state.createdAt,
  state.endpointId,
];

/**
 * A delivery that waits for an attempt, by endpoint then by when it may next be attempted (`availableAt`; while an
 * attempt is being sent: the end of its lease, when another sender may take it over): [endpointId, at, deliveryId]
 * → ''. By endpoint first, so that a sender takes each endpoint's earliest in turn and an endpoint with a backlog of
 * thousands (a dead one) holds back no other (storage/webhookReads.ts).
 */
export const webhookDueKeyOf = (state: DeliveryState): IndexKey | undefined => {
  const { endpointId, availableAt, leaseUntil, deliveryId } = state.context;
  if (state.status === 'waiting') return [endpointId, availableAt, deliveryId];
  if (state.status === 'sending') return [endpointId, leaseUntil ?? availableAt, deliveryId];
  return undefined;
};

/** An endpoint's deliveries, by the time of the event they are about (its delivery log, newest first):
 * [endpointId, createdAt, deliveryId] → ''. */
export const endpointWebhookDeliveryKeyOf = (state: DeliveryState): IndexKey => [
  state.context.endpointId,
  state.context.createdAt,
  state.context.deliveryId,
];

/**
 * Applies one webhook event: its endpoint's view (an endpoint's own events, and its deliveries' outcomes, which tell
 * whether it is failing) and its entry among its account's endpoints; a delivery's view and its entries in the due
 * index and its endpoint's delivery log.
 */
export const projectWebhookEvent = (views: ViewAccess, event: WebhookEvent): void => {
  const endpointBefore = views.getWebhookEndpoint(event.endpointId);
  const endpointAfter = evolveEndpoint(endpointBefore, event);
  if (endpointAfter !== undefined && endpointAfter !== endpointBefore) {
    views.putWebhookEndpoint(event.endpointId, endpointAfter);
    const listed = (state: WebhookEndpointState | undefined) => state !== undefined && state.status !== 'removed';
    if (!listed(endpointBefore) && listed(endpointAfter))
      views.putIndex('accountWebhookEndpoints', accountWebhookEndpointKeyOf(endpointAfter), '');
    if (listed(endpointBefore) && !listed(endpointAfter))
      views.removeIndex('accountWebhookEndpoints', accountWebhookEndpointKeyOf(endpointAfter));
  }
  if (!isWebhookDeliveryEvent(event)) return;
  const before = views.getWebhookDelivery(event.deliveryId) ?? initialDeliveryState;
  const after = evolveDelivery(before, event);
  if (after === before) return;
  views.putWebhookDelivery(event.deliveryId, after);
  if (before.status === 'none') views.putIndex('endpointWebhookDeliveries', endpointWebhookDeliveryKeyOf(after), '');
  moveIndex(views, 'webhookDue', webhookDueKeyOf(before), webhookDueKeyOf(after));
};
