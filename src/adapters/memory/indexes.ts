import type { IndexRange, OrderedIndexes } from '../../storage/orderedIndexes.js';
import type { GroupName, IndexKey, IndexName } from '../../storage/projection.js';
import { compareKeys, type OrderedMap } from './orderedMap.js';

/** The entries of a range (orderedIndexes.ts), as LMDB reads them: `end` and everything beyond it left out. */
function* entriesOf<V>(map: OrderedMap<V>, { start, end, reverse, limit }: IndexRange): Iterable<[IndexKey, V]> {
  if (limit !== undefined && !(limit > 0)) return;
  let count = 0;
  const entries = reverse === true ? map.entriesReversed(start, undefined, false) : map.entries(start);
  for (const entry of entries) {
    if (end !== undefined && compareKeys(entry[0], end) * (reverse === true ? -1 : 1) >= 0) return;
    yield entry;
    if (limit !== undefined && ++count >= limit) return;
  }
}

/** The in-memory store's sorted maps as the reads written once over ordered maps read them. */
export const memoryIndexes = (
  indexes: Record<IndexName, OrderedMap<string>>,
  groups: Record<GroupName, OrderedMap<ReadonlySet<string>>>,
): OrderedIndexes => ({
  *keys(index, range) {
    for (const [key] of entriesOf(indexes[index], range)) yield key;
  },
  // Read whole before they are handed over: a claim holds its lanes' entries while the batch it is part of goes on
  // writing the same tree (a B+ tree's iterator does not survive a change of the tree).
  entries: (index, range) => Array.from(entriesOf(indexes[index], range), ([key, value]) => ({ key, value })),
  count: (index, range) => {
    let count = 0;
    for (const _ of entriesOf(indexes[index], range)) count++;
    return count;
  },
  *groups(group, until) {
    for (const [at, members] of groups[group].entries()) {
      if (until !== undefined && (at as number) > until) return;
      yield { at: at as number, ids: [...members].sort() };
    }
  },
  nextGroupAfter: (group, after) => groups[group].nextHigherKey(after) as number | undefined,
});
