import type { GroupName, IndexKey, IndexName } from './projection.js';

/**
 * A range of an index's keys in key order: from `start` (inclusive; absent: the first key) up to `end` (exclusive;
 * absent: the last key), or with `reverse` from `start` down to `end`; `limit` keys at most. A range is given to one
 * read only, never kept or given again: LMDB writes its own settings into it.
 */
export type IndexRange = {
  readonly start?: IndexKey;
  readonly end?: IndexKey;
  readonly reverse?: boolean;
  readonly limit?: number;
};

/**
 * What a store whose indexes are ordered maps read at once (LMDB, memory) gives the reads written over them once
 * (indexReads.ts, webhookReads.ts): ranges of the indexes of projection.ts in their key order (LMDB's: array keys
 * element by element, numbers before strings, a prefix before what extends it), and the grouped indexes.
 */
export interface OrderedIndexes {
  keys(index: IndexName, range: IndexRange): Iterable<IndexKey>;
  entries(index: IndexName, range: IndexRange): Iterable<{ readonly key: IndexKey; readonly value: string }>;
  /** How many keys the range holds (no `reverse`, no `limit`). */
  count(index: IndexName, range: IndexRange): number;
  /** A grouped index's groups in time order (up to `until` ms, inclusive, when given), each its time and its request
   * ids, sorted. */
  groups(group: GroupName, until?: number): Iterable<{ readonly at: number; readonly ids: readonly string[] }>;
  /** The earliest time of a group of a grouped index after `after` (ms), if any. */
  nextGroupAfter(group: GroupName, after: number): number | undefined;
}

/** Every key of an index that starts with [prefix, …] sorts within [prefix] and [prefix + NUL]. */
export const pastPrefix = (prefix: string) => `${prefix}\u0000`;
