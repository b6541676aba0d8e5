import { countersOf } from '../../domain/processingCounters.js';
import { countsAsQueued } from '../../domain/queuedCounter.js';
import { addRebuiltUsage, type StoredUsage } from '../../storage/hourlyUsage.js';
import {
  accountRequestKeyOf,
  accountRequestKindKeyOf,
  dispatchKeyOf,
  type GroupName,
  groupOf,
  type IndexKey,
  usageOf,
} from '../../storage/projection.js';
import { keyText } from '../../storage/verifyReport.js';
import { holdsText, viewEnd, viewMatches } from './codec.js';
import { type LmdbDatabases, requestKey } from './databases.js';
import { waitingCountKey } from './migrations.js';
import type { RequestColumns } from './requestColumns.js';
import { storedGroupsOf } from './verifyGroups.js';

/** The rebuilt requests checked against their records, the grouped indexes, the dispatch index and the account ones. */

const sameKey = (a: IndexKey, b: IndexKey | undefined): boolean =>
  Array.isArray(a) && Array.isArray(b) ? a.length === b.length && a.every((part, i) => part === b[i]) : a === b;

/**
 * Compares every rebuilt request with what is stored for it, reporting to `differ`; returns the counts and usage the
 * log gives, for the caller to compare with the stored views.
 */
export const verifyRequests = (dbs: LmdbDatabases, columns: RequestColumns, differ: (message: string) => void) => {
  const { membersOf, checkCounts } = storedGroupsOf(dbs, differ);

  // One pass over the rebuilt requests: each stored record (its view compared as an encoded value; text kept
  // exactly while the status calls for it: a prompt is never empty, a response may be), the group each belongs to,
  // and what the dispatch index should hold. Together with the counts, every stored entry is accounted for.
  let waiting = 0;
  let unexpired = 0;
  let missing = 0;
  const queuedPerAccount = new Map<string, number>();
  const processingPerCounter = new Map<string, number>();
  const dailyUsage = new Map<string, [number, number]>();
  const hourlyUsage = new Map<string, StoredUsage>();
  const inGroups: Record<GroupName, number> = { expiry: 0, processing: 0 };
  const ids = columns.ids();
  for (let slot = 0; slot < ids.length; slot++) {
    const reqId = ids[slot] as string;
    // The working state, filled from the slot (no object per request; absent fields are undefined, which the
    // projection's rules and the view's encoding read as absent).
    const rebuilt = columns.load(slot);
    if (dispatchKeyOf(rebuilt) !== undefined) waiting++;
    addRebuiltUsage(hourlyUsage, rebuilt, keyText);
    const used = usageOf(rebuilt);
    if (used !== undefined) {
      const key = keyText([rebuilt.context.accountId, used.day]);
      const sum = dailyUsage.get(key) ?? [0, 0];
      dailyUsage.set(key, [sum[0] + used.usage.inputTokens, sum[1] + used.usage.outputTokens]);
    }
    if (rebuilt.status === 'processing')
      for (const counter of countersOf(rebuilt.context))
        processingPerCounter.set(counter, (processingPerCounter.get(counter) ?? 0) + 1);
    if (countsAsQueued(rebuilt)) {
      const { accountId } = rebuilt.context;
      queuedPerAccount.set(accountId, (queuedPerAccount.get(accountId) ?? 0) + 1);
    }
    if (accountRequestKeyOf(rebuilt) !== undefined) unexpired++;
    for (const name of ['expiry', 'processing'] as const) {
      const group = groupOf[name](rebuilt);
      if (group === undefined) continue;
      inGroups[name]++;
      if (!membersOf[name](group).has(reqId)) differ(`group ${name} ${group}: does not hold ${reqId}, the log does`);
    }
    const record = dbs.requests.getBinaryFast(requestKey(reqId));
    if (record === undefined) {
      differ(`request ${reqId}: produced by the log but not stored`);
      missing++;
      continue;
    }
    if (!viewMatches(rebuilt, record)) differ(`request ${reqId}: the stored view differs from the log's`);
    else {
      const textLength = record.length - viewEnd(record);
      const queued = rebuilt.status === 'waiting' || rebuilt.status === 'processing';
      if ((queued && textLength === 0) || (!holdsText(rebuilt.status) && textLength > 0))
        differ(`request ${reqId}: ${textLength === 0 ? 'no' : 'a'} text stored while it is ${rebuilt.status}`);
    }
  }
  checkCounts(inGroups);
  const storedRequests = (dbs.requests.getStats() as { entryCount: number }).entryCount;
  // Records the log does not make: there are some if the counts differ, or if some the log makes are missing.
  if (storedRequests !== columns.size() || missing > 0) {
    for (const key of dbs.requests.getKeys({})) {
      const reqId = key.toString('utf8');
      if (columns.slotOf(reqId) === undefined) differ(`request ${reqId}: stored but not produced by the log`);
    }
    if (storedRequests !== columns.size())
      differ(`requests: ${storedRequests} records stored, the log gives ${columns.size()}`);
  }

  // The dispatch index: every stored entry is the one its request's state calls for, and none is missing.
  let dispatched = 0;
  for (const { key, value } of dbs.indexes.dispatch.getRange({})) {
    dispatched++;
    const slot = columns.slotOf((key as (string | number)[])[2] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : dispatchKeyOf(state);
    if (!sameKey(key, wanted)) differ(`index dispatch ${keyText(key)}: stored but not produced by the log`);
    else if (value !== state?.context.model) differ(`index dispatch ${keyText(key)}: model differs`);
  }
  if (dispatched !== waiting) differ(`index dispatch: ${dispatched} entries stored, the log gives ${waiting}`);
  const storedWaiting = dbs.meta.get(waitingCountKey) ?? 0;
  if (storedWaiting !== waiting) differ(`meta waiting: stored ${storedWaiting} but the log gives ${waiting}`);

  // The index of requests by account, the same way; when the counts differ, the entries the log calls for and the
  // index lacks are named too (a second pass, made only then).
  let listed = 0;
  for (const { key, value } of dbs.indexes.accountRequests.getRange({})) {
    listed++;
    const slot = columns.slotOf((key as (string | number)[])[2] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : accountRequestKeyOf(state);
    if (!sameKey(key, wanted)) differ(`index accountRequests ${keyText(key)}: stored but not produced by the log`);
    else if (value !== '') differ(`index accountRequests ${keyText(key)}: holds a value`);
  }
  if (listed !== unexpired) {
    for (let slot = 0; slot < ids.length; slot++) {
      const wanted = accountRequestKeyOf(columns.load(slot));
      if (wanted !== undefined && !dbs.indexes.accountRequests.doesExist(wanted))
        differ(`index accountRequests ${keyText(wanted)}: produced by the log but not stored`);
    }
    differ(`index accountRequests: ${listed} entries stored, the log gives ${unexpired}`);
  }
  // The same requests by kind (interactive or a batch's line): one entry each, the projection's own key.
  let listedByKind = 0;
  for (const { key, value } of dbs.indexes.accountRequestsByKind.getRange({})) {
    listedByKind++;
    const slot = columns.slotOf((key as (string | number)[])[3] as string);
    const state = slot === undefined ? undefined : columns.read(slot);
    const wanted = state === undefined ? undefined : accountRequestKindKeyOf(state);
    if (!sameKey(key, wanted) || value !== '')
      differ(`index accountRequestsByKind ${keyText(key)}: stored but not produced by the log`);
  }
  if (listedByKind !== unexpired)
    differ(`index accountRequestsByKind: ${listedByKind} entries stored, the log gives ${unexpired}`);
  return { queuedPerAccount, processingPerCounter, dailyUsage, hourlyUsage };
};
