import type { AccountEvent } from '../../domain/account/events.js';
import { type AccountState, evolveAccount, evolveKey, type KeyState } from '../../domain/account/state.js';
import { isQueued, type RequestState } from '../../domain/request/state.js';

/** Secondary indexes kept beside the views. Keys are LMDB ordered keys (arrays sort element by element). */
export type IndexName = 'dispatch' | 'expiry' | 'emails' | 'keyHashes' | 'accountKeys';
export type IndexKey = string | number | (string | number)[];

/**
 * Where the projection reads and writes views. LMDB implements it inside the write transaction of a batch;
 * `airs replay --verify` implements it in memory to rebuild everything from the log and compare.
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
  /** Index values are strings; an index that only needs its keys stores ''. */
  putIndex(index: IndexName, key: IndexKey, value: string): void;
  removeIndex(index: IndexName, key: IndexKey): void;
  /** Counts account and key events: a reader that sees the count unchanged knows no account or key changed. */
  bumpAccountsVersion(): void;
}

/**
 * A queued request (waiting or being processed) is in the dispatch index until it settles or expires: grouped by
 * account (so workers can take accounts in turn), then by the time it becomes available. The value is its model.
 */
export const dispatchKeyOf = (state: RequestState): IndexKey | undefined =>
  isQueued(state.status) ? [state.context.accountId, state.context.availableAt, state.context.reqId] : undefined;

/** Every request that exists and has not expired yet is in the expiry index, by expiry time. */
export const expiryKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'none' || state.status === 'expired' ? undefined : [state.context.expiresAt, state.context.reqId];

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
  moveIndex(views, 'expiry', expiryKeyOf(before), expiryKeyOf(after));
};

/** Applies one account or key event to the views and indexes it touches. */
export const projectAccountEvent = (views: ViewAccess, event: AccountEvent): void => {
  views.bumpAccountsVersion();
  const account = evolveAccount(views.getAccount(event.accountId), event);
  if (account !== undefined) views.putAccount(event.accountId, account);
  if (event.type === 'AccountCreated') views.putIndex('emails', event.email, event.accountId);
  if (event.type === 'ApiKeyCreated' || event.type === 'ApiKeyRevoked') {
    const key = evolveKey(views.getKey(event.keyId), event);
    if (key !== undefined) views.putKey(event.keyId, key);
  }
  if (event.type === 'ApiKeyCreated') {
    views.putIndex('keyHashes', event.keyHash, event.keyId);
    views.putIndex('accountKeys', [event.accountId, event.keyId], '');
  }
};
