import { Context, type Effect } from 'effect';
import type { AccountState, KeyState } from '../domain/account/state.js';
import type { DomainEvent, StoredEvent } from '../domain/events.js';
import type { RequestState } from '../domain/request/state.js';

export type PayloadKind = 'prompt' | 'response';

/** A queued request as the dispatcher sees it. */
export type QueuedEntry = { readonly reqId: string; readonly availableAt: number; readonly model: string };

/** Reads of the views and the log, as of the latest committed state (or, inside `transact`, the open transaction). */
export interface StoreReads {
  /**
   * Makes the following reads see everything committed up to now, also by other processes (the CLI). Reads are
   * otherwise served from a snapshot that is renewed lazily, a moment after it was taken.
   */
  refresh(): void;
  request(reqId: string): RequestState | undefined;
  payload(reqId: string, kind: PayloadKind): string | undefined;
  account(accountId: string): AccountState | undefined;
  accountIdByEmail(email: string): string | undefined;
  accounts(): Iterable<AccountState>;
  key(keyId: string): KeyState | undefined;
  keyIdByHash(keyHash: string): string | undefined;
  keysOf(accountId: string): KeyState[];
  /** Accounts with queued requests, in id order, starting after `after` and wrapping round to it. */
  queuedAccounts(after: string | undefined): Iterable<string>;
  /** An account's queued requests (waiting or being processed), earliest availability first. */
  queuedOf(accountId: string): Iterable<QueuedEntry>;
  /** Ids of requests whose expiry time is at or before `now` and that have not been expired yet. */
  dueForExpiry(now: number, limit: number): string[];
  /** The log in order, from `fromSeq` (inclusive). */
  events(fromSeq?: number): Iterable<StoredEvent>;
  lastSeq(): number;
}

/** What a write transaction may do: append events (views follow in the same transaction) and store payloads. */
export interface StoreWrites extends StoreReads {
  append(event: DomainEvent): StoredEvent;
  putPayload(reqId: string, kind: PayloadKind, text: string): void;
}

export interface StoreShape {
  readonly reads: StoreReads;
  /**
   * Runs `work` inside one write transaction, batched with concurrent ones into one commit, and succeeds only
   * once that commit is flushed to disk. If `work` throws, its writes are rolled back and the error is raised.
   */
  transact<A>(work: (tx: StoreWrites) => A): Effect.Effect<A>;
  /** The same as a plain promise, for the code that runs outside Effect (workers, CLI). */
  transactPromise<A>(work: (tx: StoreWrites) => A): Promise<A>;
  close(): Promise<void>;
}

/** The event log and its views. Live: LMDB on disk (adapters/lmdb). */
export class Store extends Context.Service<Store, StoreShape>()('airs/Store') {}
