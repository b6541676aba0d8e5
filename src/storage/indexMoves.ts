/** Moving a view's index entry from one key to another, only where the key changed. */
import type { IndexKey, IndexName, ViewAccess } from './viewAccess.js';

const sameKey = (a: IndexKey | undefined, b: IndexKey | undefined): boolean => {
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((part, i) => part === b[i]);
  return a === b;
};

export const moveIndex = (
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
