import BTreeModule from 'sorted-btree';
import type { IndexKey } from '../../storage/projection.js';

// sorted-btree is CommonJS: its class is the module's `default` export (which an ESM loader may hand over directly).
const BTree: typeof BTreeModule.default =
  (BTreeModule as unknown as { default?: typeof BTreeModule.default }).default ??
  (BTreeModule as unknown as typeof BTreeModule.default);

const comparePart = (a: string | number, b: string | number): number => {
  // As LMDB's ordered keys: numbers before strings, each in its natural order.
  if (typeof a !== typeof b) return typeof a === 'number' ? -1 : 1;
  return a < b ? -1 : a > b ? 1 : 0;
};

/** The order LMDB gives the store's index keys: arrays element by element, a prefix before what extends it. */
export const compareKeys = (a: IndexKey, b: IndexKey): number => {
  if (!Array.isArray(a) || !Array.isArray(b)) {
    if (Array.isArray(a) || Array.isArray(b)) return Array.isArray(a) ? 1 : -1;
    return comparePart(a, b);
  }
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const order = comparePart(a[i] as string | number, b[i] as string | number);
    if (order !== 0) return order;
  }
  return a.length - b.length;
};

/** A sorted map of index keys (a B+ tree), the in-memory counterpart of an LMDB database's key order. */
export type OrderedMap<V> = BTreeModule.default<IndexKey, V>;

export const orderedMap = <V>(): OrderedMap<V> => new BTree<IndexKey, V>(undefined, compareKeys);
