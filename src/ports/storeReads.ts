/** The store's read model (ReadModel): its reads of the views and the log, and the pages and answers they use. */
import type { AccountState, KeyState, SessionState } from '../domain/account/state.js';
import type { BatchView } from '../domain/batch/state.js';
import type { StoredEvent } from '../domain/events.js';
import type { FileState } from '../domain/file/state.js';
import type { AccountUploads } from '../domain/file/uploads.js';
import type { QueuedRequest } from '../domain/queuePosition.js';
import type { RequestState } from '../domain/request/state.js';
import type { TokenBucket } from '../domain/tokens/tokenUse.js';
import type { UsageKey, UsageRow } from '../domain/usage/hourlyUsage.js';
import type { DeliveryState } from '../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../domain/webhook/endpoint.js';

/** Tokens read and written on one day. */
export type DailyTokens = { readonly day: number; readonly inputTokens: number; readonly outputTokens: number };

/** A read of the hourly usage view (domain/usage/hourlyUsage.ts): rows of hours in [fromHour, toHour), after `after`
 * (exclusive) when given, in key order (hour, account, model), `limit` at most (`maxUsageRowsPerRead` caps it). */
export type UsageRange = {
  readonly fromHour: number;
  readonly toHour: number;
  readonly after?: UsageKey | undefined;
  readonly limit: number;
};

/** Where a page of an account's requests ends: the creation time and id of its last (oldest) or first (newest) row. */
export type RequestCursor = { readonly createdAt: number; readonly reqId: string };

/** Which of an account's requests: those made one by one on the API's faces, or its batches' lines. */
export type RequestKind = 'interactive' | 'batch';

/** One page of an account's requests: the newest, or those older than `before`, or those just newer than `after`
 * (at most one of the two), `limit` of them at most; only those of `kind` when given (read from an index by kind, so
 * the page reads only the rows it returns). */
export type RequestPage = {
  readonly before?: RequestCursor | undefined;
  readonly after?: RequestCursor | undefined;
  readonly limit: number;
  readonly kind?: RequestKind | undefined;
};

/** An account's batches, or its files (that exist), by creation time. */
export type ListName = 'accountBatches' | 'accountFiles';

/**
 * A page of such a list: `limit` ids (at most `maxListRows`), newest first (`desc`) or oldest first, strictly beyond
 * `from` when given; of the account's files, only those of `purpose` when given (read from an index of their own, so
 * the page reads only the rows it returns).
 */
export type ListPage = {
  readonly from?: { readonly createdAt: number; readonly id: string } | undefined;
  readonly order: 'asc' | 'desc';
  readonly limit: number;
  readonly purpose?: string | undefined;
};

/**
 * The most ids one page of a list gives (a larger `limit` is read as this): one list call reads at most this many rows
 * of its index, and the cursor's own. The files list's largest page (10,000) and the one more that says whether more
 * is left.
 */
export const maxListRows = 10_001;

/** An upload whose reservation is past its time and has not been ended (what the file sweep ends). */
export type LapsedUpload = { readonly accountId: string; readonly fileId: string };

/** A batch that has not ended, and its account. */
export type OpenBatch = { readonly batchId: string; readonly accountId: string };

/** A request and the text it holds now: its prompt while it is queued, its response once it is completed. */
export type StoredRequest = { readonly state: RequestState; readonly text: string | undefined };

/** Whether work can be taken now, and when some next becomes due without anything else happening. */
export type DueWork = { readonly now: boolean; readonly next?: number | undefined };

/** One model's queue as the metrics show it: requests waiting (for a worker or a retry), and since when the oldest
 * available one (at or before the time asked about) waits; none available: Infinity. */
export type ModelQueue = { readonly model: string; readonly depth: number; readonly oldestAvailableAt: number };

/** The queue by model, read at most `limit` entries deep (`truncated` then). */
export type QueueDepths = { readonly models: readonly ModelQueue[]; readonly truncated: boolean };

/** A page of an endpoint's deliveries, newest first: those older than `before` when given, `limit` at most. */
export type DeliveryPage = {
  readonly before?: { readonly createdAt: number; readonly deliveryId: string } | undefined;
  readonly limit: number;
};

/** What a webhook sender asks of the due deliveries (see `ReadModel.dueWebhookDeliveries`). */
export type DueDeliveriesAsk = {
  /** The endpoint the last look ended at: this one starts after it (so every endpoint comes in turn). */
  readonly after?: string | undefined;
  readonly perEndpoint: number;
  readonly limit: number;
  /** Endpoints the sender can give no place now: read past, their deliveries neither returned nor counted toward
   * `limit` (they count toward the read's bound of endpoints looked at). */
  readonly passOver?: ((endpointId: string) => boolean) | undefined;
};

/** Deliveries that may be attempted now, and when one next becomes due (if it was seen). */
export type DueDeliveries = {
  readonly due: readonly { readonly deliveryId: string; readonly endpointId: string }[];
  readonly next?: number | undefined;
  /** Present when a bound (`limit`, or the endpoints one read looks at) stopped the read before it came round to
   * `after`: the last endpoint it looked at, where the next read goes on from. */
  readonly stoppedAt?: string | undefined;
};

/** An endpoint's deliveries not settled (waiting or being sent), counted up to a bound (`truncated`: more wait), and
 * the earliest time one of them is next attempted. */
export type WebhookBacklog = {
  readonly waiting: number;
  readonly truncated: boolean;
  readonly nextAttemptAt?: number | undefined;
};

/** Reads of the views and the log. Each sees everything committed before it began, also by other processes. */
export interface ReadModel {
  request(reqId: string): Promise<RequestState | undefined>;
  requestWithText(reqId: string): Promise<StoredRequest | undefined>;
  /** Many requests with their text at once, in the order asked (undefined where there is none): one statement on
   * PostgreSQL, where a batch's output would otherwise take a round trip per line. */
  requestsWithText(reqIds: readonly string[]): Promise<(StoredRequest | undefined)[]>;
  /** Many requests' states at once, without their text, in the order asked: what a batch's lines are, read without
   * their prompts and answers (one statement on PostgreSQL). */
  requests(reqIds: readonly string[]): Promise<(RequestState | undefined)[]>;
  account(accountId: string): Promise<AccountState | undefined>;
  accountIdByEmail(email: string): Promise<string | undefined>;
  accounts(): Promise<AccountState[]>;
  key(keyId: string): Promise<KeyState | undefined>;
  keyIdByHash(keyHash: string): Promise<string | undefined>;
  keysOf(accountId: string): Promise<KeyState[]>;
  /** A number that changes whenever any account or key changes (also by another process): a cache of accounts and
   * keys read after it is current exactly while it is unchanged. */
  accountsVersion(): Promise<number>;
  /** A credential kept beside the log (`passwordCredentialKey`, `sessionCredentialKey`). */
  credential(key: string): Promise<string | undefined>;
  /** A dashboard session that has not ended. */
  session(sessionId: string): Promise<SessionState | undefined>;
  /** The rate-limiter state of an account's budget (its theoretical arrival time), if any. */
  limiterState(accountId: string, budget: string): Promise<number | undefined>;
  /** An account's requests not expired yet, newest first, a page of them (see RequestPage). */
  requestsOf(accountId: string, page: RequestPage): Promise<RequestState[]>;
  /** How many of an account's requests (not expired yet) were created in each of `hours` hours from `fromMs`. */
  requestCountsByHour(accountId: string, fromMs: number, hours: number): Promise<number[]>;
  /** Tokens the account's completed requests read and wrote on each of `days` UTC days from `fromDay`. */
  usageByDay(accountId: string, fromDay: number, days: number): Promise<DailyTokens[]>;
  /** The account's token buckets (domain/tokens/tokenUse.ts): tokens of its requests that ended in each of the last
   * 60 seconds, this UTC day and this calendar month, exact across processes and nodes. At most about 62 of them. */
  tokenUse(accountId: string): Promise<TokenBucket[]>;
  /** Rows of the hourly usage view (per hour, account and model: tokens and completed requests), in key order. */
  usageRows(range: UsageRange): Promise<UsageRow[]>;
  /** When the key was last used for an API call, as last saved (up to about a second behind), if ever. */
  keyLastUsed(keyId: string): Promise<number | undefined>;
  /** Ids of up to `limit` requests whose expiry time is at or before `now` and that have not been expired yet. */
  dueForExpiry(now: number, limit: number): Promise<string[]>;
  /** Ids of up to `limit` requests being processed, whether their lease runs or lapsed: where a server looks for the
   * leases of processes that no longer exist (`StoreShape.owners`). */
  processing(limit: number): Promise<string[]>;
  /** Whether a claim could take work at `now`, and the next time after `now` that work becomes due. */
  dueWork(now: number): Promise<DueWork>;
  /** The waiting requests by model, for the metrics (read at most `limit` entries deep). */
  queueDepths(now: number, limit: number): Promise<QueueDepths>;
  /** A waiting request's place in the claim's order at `now` (domain/queuePosition.ts: how many due requests of its
   * model go first, at most `queuePositionCap`), reading each lane with work at most once; undefined when it is not
   * in the dispatch index (started, or no longer waiting). */
  queuePosition(request: QueuedRequest, now: number, promoteAfterMs: number | undefined): Promise<number | undefined>;
  /** A batch (its state and its lines' counts), if it was made. */
  batch(batchId: string): Promise<BatchView | undefined>;
  /** A file that exists (not deleted). */
  file(fileId: string): Promise<FileState | undefined>;
  /** Ids of a page of an account's batches or files (ListPage). */
  listOf(list: ListName, accountId: string, page: ListPage): Promise<string[]>;
  /** Up to `limit` batches that have not ended, by account then id. */
  openBatches(limit: number): Promise<OpenBatch[]>;
  /**
   * Accounts with batches not ended, in id order, starting after `after` and wrapping round to it (`after` included
   * while it has any), `limit` at most: the order each server's batch runner takes them in (accounts in turn).
   */
  openBatchAccounts(after: string | undefined, limit: number): Promise<string[]>;
  /** Ids of up to `limit` of an account's batches not ended, in id order, after `after` (from its first without). */
  openBatchesOf(accountId: string, after: string | undefined, limit: number): Promise<string[]>;
  /** Whether a batch not ended reads the file as its input (its bytes must stay, even once the file is deleted). */
  isOpenBatchInput(fileId: string): Promise<boolean>;
  /** Requests being processed, in all processes and nodes, that count in a counter (domain/processingCounters.ts), as
   * committed: what `airs models list` and the metrics show as an upstream's calls in flight. */
  processingCount(counter: string): Promise<number>;
  /** An account's counter (domain/accountCounters.ts: its open batches, the bytes of its files kept), as committed. */
  accountCount(counter: string): Promise<number>;
  /** An account's uploads whose reservation has not ended (domain/file/uploads.ts). */
  uploadsOf(accountId: string): Promise<AccountUploads>;
  /** Up to `limit` uploads of any account whose reservation's time was up at `now` and that have not been ended. */
  lapsedUploads(now: number, limit: number): Promise<LapsedUpload[]>;
  /** A webhook endpoint, removed ones too. */
  webhookEndpoint(endpointId: string): Promise<WebhookEndpointState | undefined>;
  /** An account's webhook endpoints that are not removed, oldest first. */
  webhookEndpointsOf(accountId: string): Promise<WebhookEndpointState[]>;
  webhookDelivery(deliveryId: string): Promise<DeliveryState | undefined>;
  /** A page of an endpoint's deliveries, newest first (its delivery log). */
  webhookDeliveriesOf(endpointId: string, page: DeliveryPage): Promise<DeliveryState[]>;
  /**
   * Deliveries that may be attempted at `now` (waiting and due, or sent under a lease that lapsed): each endpoint's
   * earliest in turn, at most `perEndpoint` of each, `limit` in all; and when one next becomes due.
   */
  dueWebhookDeliveries(now: number, ask: DueDeliveriesAsk): Promise<DueDeliveries>;
  /** An endpoint's backlog, `limit` deliveries counted at most (WebhookBacklog). */
  webhookBacklog(endpointId: string, limit: number): Promise<WebhookBacklog>;
  /** The log in order, from `fromSeq` (inclusive). */
  events(fromSeq?: number): AsyncIterable<StoredEvent>;
  lastSeq(): Promise<number>;
  /**
   * Hears that another writer changed the store, within a short while (LMDB: the data file's change notifications and
   * a slow poll; PostgreSQL: NOTIFY; memory: every commit, as it cannot tell its writers apart). This process's own
   * commits may be heard too. Returns the way to stop hearing.
   */
  onChange(listener: () => void): () => void;
}
