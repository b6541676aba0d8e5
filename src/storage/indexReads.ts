import type { KeyState } from '../domain/account/state.js';
import type { QueuedEntry } from '../domain/claimFairly.js';
import type { RequestState } from '../domain/request/state.js';
import {
  type DailyTokens,
  type ListName,
  type ListPage,
  maxListRows,
  type OpenBatch,
  type RequestPage,
} from '../ports/Store.js';
import { accountsInTurn } from './accountsInTurn.js';
import type { OrderedIndexes } from './orderedIndexes.js';
import { pastPrefix } from './orderedIndexes.js';
import type { GroupName, IndexKey } from './projection.js';
import { bucketStarts, dayMs, hourMs } from './timeBuckets.js';

/** The views these reads look up what an index names in. */
export type IndexedViews = {
  readonly request: (reqId: string) => RequestState | undefined;
  readonly key: (keyId: string) => KeyState | undefined;
  /** Tokens [input, output] an account's requests completed on the day starting at `day` (UTC, ms) used. */
  readonly dailyUsage: (accountId: string, day: number) => readonly [number, number] | undefined;
};

const firstOf = <T>(items: Iterable<T>): T | undefined => {
  for (const item of items) return item;
  return undefined;
};

/** An account's keys of an index by [accountId, …]. */
const ofAccount = (accountId: string) => ({ start: [accountId], end: [pastPrefix(accountId)] });

/**
 * The reads of a store whose indexes are ordered maps read at once (LMDB, memory), written once over their ranges
 * (orderedIndexes.ts): the dispatch index's accounts in turn, an account's keys, sessions, requests page by page,
 * batches and files, the per-hour and per-day counts, and the grouped indexes. PostgreSQL answers the same in SQL
 * (adapters/postgres/reads.ts, held to the same contract suite).
 */
export const indexReadsOf = (indexes: OrderedIndexes, views: IndexedViews) => {
  /** The first account in the dispatch index after `account` (one seek past its whole range). */
  const accountAfter = (account: string): string | undefined =>
    (firstOf(indexes.keys('dispatch', { start: [pastPrefix(account)], limit: 1 })) as [string] | undefined)?.[0];

  /** Accounts with requests waiting for a worker, in id order, starting after `after` and wrapping round to it. */
  const queuedAccounts = (after: string | undefined): Iterable<string> => accountsInTurn(accountAfter, after);

  /** An account's requests waiting for a worker, earliest availability first. */
  function* queuedOf(accountId: string): Iterable<QueuedEntry> {
    for (const { key, value } of indexes.entries('dispatch', ofAccount(accountId))) {
      const [, availableAt, reqId] = key as [string, number, string];
      yield { reqId, availableAt, model: value };
    }
  }

  const keysOf = (accountId: string): KeyState[] => {
    const found: KeyState[] = [];
    for (const key of indexes.keys('accountKeys', ofAccount(accountId))) {
      const state = views.key((key as [string, string])[1]);
      if (state !== undefined) found.push(state);
    }
    return found;
  };

  /** Ids of an account's sessions that have not ended. */
  const sessionsOf = (accountId: string): string[] =>
    Array.from(indexes.keys('accountSessions', ofAccount(accountId)), (key) => (key as [string, string])[1]);

  /**
   * An account's requests from the index by account and creation time, newest first: the newest, those older than
   * `before`, or those just newer than `after`. Reads `limit` rows at most, wherever the cursor is.
   */
  const requestsOf = (accountId: string, { before, after, limit, kind }: RequestPage): RequestState[] => {
    const rows: RequestState[] = [];
    if (!(limit > 0)) return rows;
    const cursor = after ?? before;
    // Of one kind: the index by [accountId, kind, …], whose keys of the account and kind start with both.
    const prefix: string[] = kind === undefined ? [accountId] : [accountId, kind];
    const past = kind === undefined ? [pastPrefix(accountId)] : [accountId, pastPrefix(kind)];
    // In reverse, a range runs from `start` (inclusive) down to `end` (exclusive). With no cursor it starts above
    // every key of the prefix; with one, at the cursor's own key, skipped. Forward (`after`), it runs from the
    // cursor's key up to the end of the prefix's keys.
    // `limit` keys and the cursor's own at most: a row whose view is missing is not made up for by reading on.
    const range =
      after !== undefined
        ? { start: [...prefix, after.createdAt, after.reqId], end: past, limit: limit + 1 }
        : {
            start: before === undefined ? past : [...prefix, before.createdAt, before.reqId],
            end: prefix,
            reverse: true,
            limit: limit + 1,
          };
    for (const key of indexes.keys(kind === undefined ? 'accountRequests' : 'accountRequestsByKind', range)) {
      const parts = key as (string | number)[];
      const createdAt = parts[prefix.length] as number;
      const reqId = parts[prefix.length + 1] as string;
      if (cursor !== undefined && createdAt === cursor.createdAt && reqId === cursor.reqId) continue;
      const state = views.request(reqId);
      if (state !== undefined) rows.push(state);
      if (rows.length >= limit) break;
    }
    return after === undefined ? rows : rows.reverse();
  };

  /**
   * A page of an account's batches or files, by the index [accountId, createdAt, id], or its files of one purpose by
   * [accountId, purpose, createdAt, id]. Reads `limit` keys (at most `maxListRows`) and the cursor's own, no more.
   */
  const listOf = (list: ListName, accountId: string, { from, order, limit, purpose }: ListPage): string[] => {
    const ids: string[] = [];
    const rows = Math.min(limit, maxListRows);
    if (!(rows > 0)) return ids;
    const byPurpose = list === 'accountFiles' && purpose !== undefined;
    const prefix: (string | number)[] = byPurpose ? [accountId, purpose] : [accountId];
    // Every key that starts with the prefix sorts before the prefix with its last part past itself.
    const past = byPurpose ? [accountId, pastPrefix(purpose)] : [pastPrefix(accountId)];
    const cursor: IndexKey | undefined = from === undefined ? undefined : [...prefix, from.createdAt, from.id];
    const range =
      order === 'desc'
        ? { start: cursor ?? past, end: prefix, reverse: true, limit: rows + 1 }
        : { start: cursor ?? prefix, end: past, limit: rows + 1 };
    for (const key of indexes.keys(byPurpose ? 'accountFilesByPurpose' : list, range)) {
      const parts = key as (string | number)[];
      const createdAt = parts[prefix.length] as number;
      const id = parts[prefix.length + 1] as string;
      if (from !== undefined && createdAt === from.createdAt && id === from.id) continue;
      ids.push(id);
      if (ids.length >= rows) break;
    }
    return ids;
  };

  const requestCountsByHour = (accountId: string, fromMs: number, hours: number): number[] =>
    bucketStarts(fromMs, hourMs, hours).map((start) =>
      indexes.count('accountRequests', { start: [accountId, start], end: [accountId, start + hourMs] }),
    );

  const usageByDay = (accountId: string, fromDay: number, days: number): DailyTokens[] =>
    bucketStarts(fromDay, dayMs, days).map((day) => {
      const [inputTokens, outputTokens] = views.dailyUsage(accountId, day) ?? [0, 0];
      return { day, inputTokens, outputTokens };
    });

  const openBatches = (limit: number): OpenBatch[] =>
    Array.from(indexes.keys('accountOpenBatches', { limit: Math.max(0, limit) }), (key) => {
      const [accountId, batchId] = key as [string, string];
      return { batchId, accountId };
    });

  /** The first account with batches not ended after `account` (one seek past its whole range). */
  const openBatchAccountAfter = (account: string): string | undefined =>
    (
      firstOf(indexes.keys('accountOpenBatches', { start: [pastPrefix(account)], limit: 1 })) as [string] | undefined
    )?.[0];

  const openBatchAccounts = (after: string | undefined, limit: number): string[] => {
    const accounts: string[] = [];
    if (!(limit > 0)) return accounts;
    for (const account of accountsInTurn(openBatchAccountAfter, after)) {
      accounts.push(account);
      if (accounts.length >= limit) break;
    }
    return accounts;
  };

  const openBatchesOf = (accountId: string, after: string | undefined, limit: number): string[] => {
    const ids: string[] = [];
    if (!(limit > 0)) return ids;
    const range = { start: after === undefined ? [accountId] : [accountId, after], end: [pastPrefix(accountId)] };
    for (const key of indexes.keys('accountOpenBatches', range)) {
      const batchId = (key as [string, string])[1];
      if (batchId === after) continue;
      ids.push(batchId);
      if (ids.length >= limit) break;
    }
    return ids;
  };

  const isOpenBatchInput = (fileId: string): boolean =>
    firstOf(indexes.keys('openBatchInputs', { start: [fileId], end: [pastPrefix(fileId)], limit: 1 })) !== undefined;

  /** Up to `limit` ids of a grouped index's groups at or before `now`, earliest first. */
  const idsInGroups = (group: GroupName, now: number, limit: number): string[] => {
    const ids: string[] = [];
    if (!(limit > 0)) return ids;
    for (const { ids: members } of indexes.groups(group, now)) {
      for (const reqId of members) {
        ids.push(reqId);
        if (ids.length >= limit) return ids;
      }
    }
    return ids;
  };

  return {
    queuedAccounts,
    queuedOf,
    keysOf,
    sessionsOf,
    requestsOf,
    listOf,
    requestCountsByHour,
    usageByDay,
    openBatches,
    openBatchAccounts,
    openBatchesOf,
    isOpenBatchInput,
    dueForExpiry: (now: number, limit: number) => idsInGroups('expiry', now, limit),
    /** Up to `limit` requests being processed whose lease lapsed at or before `now`, earliest lapse first. */
    lapsedLeases: (now: number, limit: number) => idsInGroups('processing', now, limit),
    /** The earliest end of a lease after `after` (ms), if any request is being processed under one. */
    nextLeaseEnd: (after: number) => indexes.nextGroupAfter('processing', after),
    /** Ids of the requests being processed, by when their leases end. */
    processing: (): string[] => Array.from(indexes.groups('processing'), ({ ids }) => ids).flat(),
  };
};
