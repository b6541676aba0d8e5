import { Context } from 'effect';
import type { AccountState, KeyState, SessionState } from '../domain/account/state.js';
import type { Command, Refusal } from '../domain/commands.js';
import type { StoredEvent } from '../domain/events.js';
import type { QueuedEntry } from '../domain/pickFairly.js';
import type { RequestState } from '../domain/request/state.js';

export type { QueuedEntry };

/** A rate limiter's state for one account and budget: its theoretical arrival time (GCRA). */
export type LimiterEntry = { readonly accountId: string; readonly budget: string; readonly tat: number };

/** When an API key was last used (ms): operational state saved with the batches, not an event. */
export type KeyUseEntry = { readonly keyId: string; readonly at: number };

/** Tokens read and written on one day. */
export type DailyTokens = { readonly day: number; readonly inputTokens: number; readonly outputTokens: number };

/** Where a page of an account's requests ends: the creation time and id of its last (oldest) or first (newest) row. */
export type RequestCursor = { readonly createdAt: number; readonly reqId: string };

/** One page of an account's requests: the newest, or those older than `before`, or those just newer than `after`
 * (at most one of the two), `limit` of them at most. */
export type RequestPage = {
  readonly before?: RequestCursor | undefined;
  readonly after?: RequestCursor | undefined;
  readonly limit: number;
};

/** Reads of the views and the log, as of the latest committed state. */
export interface StoreReads {
  /**
   * Makes the following reads see everything committed up to now, also by other processes (the CLI). Reads are
   * otherwise served from a snapshot that is renewed lazily, a moment after it was taken.
   */
  refresh(): void;
  request(reqId: string): RequestState | undefined;
  /** A request and the text it holds now: its prompt while it is queued, its response once it is completed. */
  requestWithText(reqId: string): { readonly state: RequestState; readonly text: string | undefined } | undefined;
  account(accountId: string): AccountState | undefined;
  accountIdByEmail(email: string): string | undefined;
  /** The request the account made with this `Idempotency-Key`, while it lives (see commands.ts for the window). */
  idempotentRequest(accountId: string, key: string): string | undefined;
  accounts(): Iterable<AccountState>;
  key(keyId: string): KeyState | undefined;
  keyIdByHash(keyHash: string): string | undefined;
  keysOf(accountId: string): KeyState[];
  /** Accounts with requests waiting for a worker, in id order, starting after `after` and wrapping round to it. */
  queuedAccounts(after: string | undefined): Iterable<string>;
  /** An account's requests waiting for a worker, earliest availability first. */
  queuedOf(accountId: string): Iterable<QueuedEntry>;
  /** Ids of requests whose expiry time is at or before `now` and that have not been expired yet. */
  dueForExpiry(now: number, limit: number): string[];
  /** Ids of the requests being processed (an attempt started, no outcome yet). */
  processing(): string[];
  /** Up to `limit` requests being processed whose lease lapsed at or before `now`, earliest lapse first. */
  lapsedLeases(now: number, limit: number): string[];
  /** The earliest end of a lease after `after` (ms), if any request is being processed under one. */
  nextLeaseEnd(after: number): number | undefined;
  /** The log in order, from `fromSeq` (inclusive). */
  events(fromSeq?: number): Iterable<StoredEvent>;
  lastSeq(): number;
  /** A number that changes whenever any account or key changes (also by another process): a cache of accounts and
   * keys read in the same snapshot is current exactly while this is unchanged. */
  accountsVersion(): number;
  /** A credential kept beside the log (`passwordCredentialKey`, `sessionCredentialKey`). */
  credential(key: string): string | undefined;
  /** A dashboard session that has not ended. */
  session(sessionId: string): SessionState | undefined;
  /** The last saved rate-limiter state of an account's budget, if any. */
  limiterState(accountId: string, budget: string): number | undefined;
  /**
   * An account's requests that have not expired (the sweeper has not written their expiry yet), newest first (by
   * creation time, then id), at most `limit` of them: from the newest; or the next older ones after `before` (the
   * cursor of the last row of the page before); or the `limit` just newer than `after` (the cursor of the first row
   * of the page after). Reads only the rows it returns, however deep the cursor is.
   */
  requestsOf(accountId: string, page: RequestPage): RequestState[];
  /**
   * How many of an account's requests (not expired yet) were created in each of `hours` slices of an hour, the
   * first starting at `fromMs` (inclusive), each ending where the next begins. Counted from the index, without
   * reading the requests.
   */
  requestCountsByHour(accountId: string, fromMs: number, hours: number): number[];
  /** When the key was last used for an API call, as last saved (up to about a second behind), if ever. */
  keyLastUsed(keyId: string): number | undefined;
  /**
   * Tokens the account's completed requests read and wrote on each of `days` UTC days, the first starting at
   * `fromDay` (a UTC midnight, ms); a day without any is zeros.
   */
  usageByDay(accountId: string, fromDay: number, days: number): DailyTokens[];
}

/** What one command of a batch came to: the events it appended, or why it appended nothing. */
export type CommandOutcome =
  | {
      readonly events: readonly StoredEvent[];
      /** A submit whose idempotency key made this request before: nothing was appended. */
      readonly replayOf?: string;
    }
  | Refusal;

/** One durable write: commands decided in order, plus limiter states and key uses that ride along (not events: not
 * in the log). */
export type Batch = {
  readonly commands: readonly Command[];
  readonly limiterStates?: readonly LimiterEntry[];
  readonly keyUses?: readonly KeyUseEntry[];
};

export interface StoreShape {
  readonly reads: StoreReads;
  /**
   * Decides and appends a batch of commands in **one** write transaction (views and indexes in the same
   * transaction), each decided against the state the ones before it left, and resolves once that transaction is
   * durable on disk. A refused command is an outcome; a command whose deciding throws is a rejected outcome of its
   * own; neither touches the others. An I/O failure rejects the whole batch: nothing of it was written; when the
   * disk is the cause (full, read-only, failing), the rejection is a `StorageFault`, and the same batch may succeed
   * later.
   */
  commit(batch: Batch): Promise<readonly (CommandOutcome | Error)[]>;
  close(): Promise<void>;
}

/** A write failed because of the disk under the store (full, read-only, I/O errors), not because of the batch. */
export class StorageFault extends Error {
  override name = 'StorageFault';
}

/** The event log and its views. Live: LMDB on disk (adapters/lmdb). */
export class Store extends Context.Service<Store, StoreShape>()('airs/Store') {}
