import type { RangeOptions } from 'lmdb';
import type { OrderedIndexes } from '../../storage/orderedIndexes.js';
import { decodeIds } from './codec.js';
import type { LmdbDatabases } from './databases.js';

const firstOf = <T>(items: Iterable<T>): T | undefined => {
  for (const item of items) return item;
  return undefined;
};

/**
 * The environment's indexes as the reads written once over ordered maps read them (storage/orderedIndexes.ts): LMDB's
 * ranges as they are, read through the current snapshot or, inside a write, the write transaction.
 */
export const lmdbIndexes = (dbs: LmdbDatabases): OrderedIndexes => ({
  // The range is handed over as it is (a copy per call cost the e2e bench about 5 % of its CPU): lmdb-js writes its
  // own settings into it (`values: false`, `onlyCount`), so every caller passes a range of its own (IndexRange).
  keys: (index, range) => dbs.indexes[index].getKeys(range as RangeOptions),
  entries: (index, range) => dbs.indexes[index].getRange(range as RangeOptions),
  count: (index, range) => dbs.indexes[index].getCount(range as RangeOptions),
  groups: (group, until) =>
    dbs.groups[group]
      .getRange(until === undefined ? {} : { end: until + 1 })
      .map(({ key, value }) => ({ at: key, ids: decodeIds(value) })),
  nextGroupAfter: (group, after) =>
    firstOf(dbs.groups[group].getKeys({ start: after + 1, limit: 1 })) as number | undefined,
});
