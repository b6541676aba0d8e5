import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeIds } from '../../src/adapters/lmdb/codec.js';
import { type LmdbDatabases, openDatabases } from '../../src/adapters/lmdb/databases.js';
import { lmdbIndexes } from '../../src/adapters/lmdb/indexes.js';
import { memoryIndexes } from '../../src/adapters/memory/indexes.js';
import { type OrderedMap, orderedMap } from '../../src/adapters/memory/orderedMap.js';
import type { IndexRange, OrderedIndexes } from '../../src/storage/orderedIndexes.js';
import type { GroupName, IndexKey, IndexName } from '../../src/storage/projection.js';

/**
 * The two implementations of storage/orderedIndexes.ts answer every range alike, so the reads written once over it
 * (indexReads.ts, webhookReads.ts) read the same on LMDB and in memory: the same keys of the same index, put into both,
 * read back by random ranges (forward and reverse, bounded or not, limited or not), counted, and grouped.
 */
const accounts = ['', 'a', 'a\u0000', 'ab', 'b', 'acct_1', 'acct_10', 'acct_2'];
const part = fc.oneof(fc.constantFrom(...accounts), fc.integer({ min: -2, max: 40 }));
const key = fc.oneof(
  fc.tuple(fc.constantFrom(...accounts), fc.integer({ min: 0, max: 40 }), fc.constantFrom('r1', 'r2', 'r3')),
  fc.array(part, { minLength: 1, maxLength: 3 }),
) as fc.Arbitrary<IndexKey>;
const range: fc.Arbitrary<IndexRange> = fc.record(
  { start: key, end: key, reverse: fc.boolean(), limit: fc.integer({ min: 0, max: 6 }) },
  { requiredKeys: [] },
);

/** lmdb-js reads a key of one element back as that element (the reads that meet such keys take both). */
const asLmdbReads = (key: IndexKey): IndexKey => (Array.isArray(key) && key.length === 1 ? (key[0] as IndexKey) : key);

let dir: string;
let dbs: LmdbDatabases;
let lmdb: OrderedIndexes;
let memory: OrderedIndexes;
const index: IndexName = 'accountRequests';
const group: GroupName = 'processing';

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airs-ordered-'));
  dbs = openDatabases(dir);
  const memoryIndex = orderedMap<string>();
  const memoryGroup = orderedMap<ReadonlySet<string>>();
  const keys = fc.sample(fc.uniqueArray(key, { minLength: 60, maxLength: 60, selector: (k) => JSON.stringify(k) }), {
    numRuns: 1,
    seed: 31,
  })[0] as IndexKey[];
  dbs.root.transactionSync(() => {
    for (const [i, k] of keys.entries()) {
      dbs.indexes[index].put(k, `v${i}`);
      memoryIndex.set(k, `v${i}`);
    }
    for (const at of [5, 9, 12, 30]) {
      const ids = [`req_${at}b`, `req_${at}a`];
      dbs.groups[group].put(at, encodeIds([...ids].sort()));
      memoryGroup.set(at, new Set(ids));
    }
  });
  lmdb = lmdbIndexes(dbs);
  const indexes = Object.fromEntries([[index, memoryIndex]]) as Record<IndexName, OrderedMap<string>>;
  const groups = { processing: memoryGroup, expiry: orderedMap() } as Record<
    GroupName,
    OrderedMap<ReadonlySet<string>>
  >;
  memory = memoryIndexes(indexes, groups);
});

afterAll(async () => {
  await dbs.root.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('The ordered indexes of LMDB and of the memory store', () => {
  it('give the same keys and entries for any range, forward or reverse, and count the same', () => {
    fc.assert(
      fc.property(range, (asked) => {
        // Each read gets a range of its own (LMDB writes its settings into the one it is given).
        expect(Array.from(memory.keys(index, { ...asked }), asLmdbReads)).toEqual([...lmdb.keys(index, { ...asked })]);
        expect(
          Array.from(memory.entries(index, { ...asked }), ({ key, value }) => ({ key: asLmdbReads(key), value })),
        ).toEqual(Array.from(lmdb.entries(index, { ...asked }), ({ key, value }) => ({ key, value })));
        const { start, end } = asked;
        const forward = () => ({ ...(start === undefined ? {} : { start }), ...(end === undefined ? {} : { end }) });
        expect(memory.count(index, forward())).toBe(lmdb.count(index, forward()));
      }),
      { numRuns: 300 },
    );
  });

  it('give the same groups up to a time, and the same next group after one', () => {
    for (const until of [undefined, 4, 5, 11, 30, 99]) {
      expect([...memory.groups(group, until)]).toEqual(
        Array.from(lmdb.groups(group, until), ({ at, ids }) => ({ at, ids })),
      );
    }
    for (const after of [Number.MIN_SAFE_INTEGER, 4, 5, 29, 30])
      expect(memory.nextGroupAfter(group, after)).toBe(lmdb.nextGroupAfter(group, after));
  });
});
