import type { GroupName } from '../../storage/projection.js';
import { countIds, decodeIds } from './codec.js';
import type { LmdbDatabases } from './databases.js';

/** The grouped indexes as stored, read for verification: each group's ids once, in order, and how many there are. */

/** The stored groups for one pass over the rebuilt requests (`membersOf`), checked whole after it (`checkCounts`). */
export const storedGroupsOf = (dbs: LmdbDatabases, differ: (message: string) => void) => {
  // The grouped indexes as stored: how many ids each holds (read from the groups' headers). Each group is decoded
  // once, when a rebuilt request asks for it or, for a group no rebuilt request belongs to, at the end.
  const storedInGroups: Record<GroupName, number> = { expiry: 0, processing: 0 };
  const storedGroupKeys: Record<GroupName, number[]> = { expiry: [], processing: [] };
  const readGroups: Record<GroupName, Set<number>> = { expiry: new Set(), processing: new Set() };
  for (const name of ['expiry', 'processing'] as const) {
    for (const { key, value } of dbs.groups[name].getRange({})) {
      storedInGroups[name] += countIds(value);
      storedGroupKeys[name].push(key);
    }
  }
  /** A stored group's ids; their order (sorted, no id twice) is checked the first time the group is read. */
  const decodeGroup = (name: GroupName, key: number, stored: Uint8Array): string[] => {
    const ids = decodeIds(stored);
    if (readGroups[name].has(key)) return ids;
    readGroups[name].add(key);
    for (let i = 1; i < ids.length; i++)
      if ((ids[i - 1] as string) >= (ids[i] as string)) differ(`group ${name} ${key}: ids out of order at ${ids[i]}`);
    return ids;
  };
  /** The ids of one stored group, as a set; requests visited in creation order mostly ask for the same group again. */
  const groupReader = (name: GroupName) => {
    let key: number | undefined;
    let ids = new Set<string>();
    return (wanted: number): Set<string> => {
      if (wanted !== key) {
        key = wanted;
        const stored = dbs.groups[name].getBinaryFast(wanted);
        ids = new Set(stored === undefined ? [] : decodeGroup(name, wanted, stored));
      }
      return ids;
    };
  };
  const membersOf: Record<GroupName, (key: number) => Set<string>> = {
    expiry: groupReader('expiry'),
    processing: groupReader('processing'),
  };
  return {
    membersOf,
    /** Decodes the groups no rebuilt request asked for, and compares the ids stored with those the log gives. */
    checkCounts(inGroups: Record<GroupName, number>) {
      for (const name of ['expiry', 'processing'] as const) {
        for (const key of storedGroupKeys[name]) {
          const stored = readGroups[name].has(key) ? undefined : dbs.groups[name].getBinaryFast(key);
          if (stored !== undefined) decodeGroup(name, key, stored);
        }
        if (storedInGroups[name] !== inGroups[name])
          differ(`group ${name}: ${storedInGroups[name]} ids stored, the log gives ${inGroups[name]}`);
      }
    },
  };
};
