import type { Command } from '../../domain/commands.js';
import type { Query } from './db.js';
import type { Need, Writes } from './overlay.js';
import { lockSpace } from './schema.js';

/**
 * What a batch locks instead of the whole log (issue 28): one advisory lock per thing it decides on and per thing it
 * writes, named by a key (below), taken as `(lockSpace.entity, hashtext(key))` and held to the transaction's end.
 *
 * - Per request (`r`), account (`a`, which also covers its sessions' list), API key (`k`), session (`s`), credential
 *   (`c`), email (`e`: a signup's uniqueness), idempotency key (`i`, per account), batch (`b`), file (`f`).
 * - Per counter that a decision reads or that a batch raises: an account's queued requests (`q`), an account's
 *   counters (`n`: open batches, bytes stored). A counter only lowered is not locked: a decision that read it before
 *   it fell decided as if it came first (it only refused more), and its row's own lock orders the additions.
 * - One for the claims (`claims`): a claim reads the whole queue, every processing counter and the lapsed leases, and
 *   raises processing counters; a submit that starts at once (`startNow`) reads the same. Claims go one at a time
 *   across all nodes (each claim takes many requests: the committer puts every worker's claim of a tick in one), while
 *   submits, outcomes and everything else run beside them. A request a claim takes is locked too (it is written), so a
 *   cancel or an outcome of that request waits for the claim, or the claim for it.
 *
 * Order, and why no two transactions wait on each other in a circle:
 * 1. The first statement of a batch's transaction takes the locks it knows it needs (what `prefetchOf` names),
 *    waiting, in ascending order of their hashes, holding nothing before.
 * 2. A lock found needed later (a request a claim picked, a counter a submit raises) is only tried
 *    (`pg_try_advisory_xact_lock`), never waited for; if one is held elsewhere the transaction rolls back and the
 *    batch starts again, taking all it needs in step 1.
 * 3. Then rows: the counters' rows (queued, processing, account counts, daily usage, keys' last uses, the log head's
 *    accounts version) are changed in a fixed order of tables, rows sorted within each (writeAll). A transaction that
 *    waits for a row holds every advisory lock it will take, and one that waits for an advisory lock holds no row.
 * So every wait is for a resource later in one total order (advisory locks by hash, then tables, then rows): no cycle.
 *
 * The transaction id (which orders the log: sequence.ts) is assigned after every lock is held: a batch that read what
 * another wrote under a common lock has the larger id, so its events come after.
 */

export const claimsKey = 'claims';

const sep = '\u001f';
/** What separates a key's kind from its id. */
export const lockSeparator = sep;
const requestKey = (id: string) => `r${sep}${id}`;

/** The lock a need of deciding is covered by (undefined: none needed, e.g. a request found by a claim's scan). */
export const lockOfNeed = (need: Need): string => {
  switch (need.kind) {
    case 'request':
      return requestKey(need.id);
    case 'account':
    case 'sessionsOf':
      return `a${sep}${need.id}`;
    case 'key':
      return `k${sep}${need.id}`;
    case 'session':
      return `s${sep}${need.id}`;
    case 'email':
      return `e${sep}${need.id}`;
    case 'credential':
      return `c${sep}${need.id}`;
    case 'batch':
      return `b${sep}${need.id}`;
    case 'file':
      return `f${sep}${need.id}`;
    case 'idempotency':
      return `i${sep}${need.accountId}${sep}${need.key}`;
    case 'queuedCount':
      return `q${sep}${need.id}`;
    case 'accountCount':
      return `n${sep}${need.id}`;
    case 'processingCount':
    case 'processingCounts':
    case 'anyWaiting':
    case 'lapsed':
    case 'accountsAfter':
    case 'queuedOf':
      return claimsKey;
  }
};

/** Locks a batch will most likely need for its writes, taken with its first (a submit raises its account's queued
 * count): fewer tries later. */
export const likelyWrites = (commands: readonly Command[]): string[] =>
  commands.flatMap((command) => (command.type === 'Submit' ? [`q${sep}${command.accountId}`] : []));

/** The locks covering what a batch writes. */
export const locksOfWrites = (writes: Writes): string[] => {
  const keys: string[] = [];
  for (const id of writes.requests.keys()) keys.push(requestKey(id));
  for (const id of writes.accounts.keys()) keys.push(`a${sep}${id}`);
  for (const [id, state] of writes.keys) keys.push(`k${sep}${id}`, `a${sep}${state.accountId}`);
  for (const id of writes.sessions.keys()) keys.push(`s${sep}${id}`);
  for (const id of writes.credentials.keys()) keys.push(`c${sep}${id}`);
  for (const id of writes.emails.keys()) keys.push(`e${sep}${id}`);
  for (const id of writes.batches.keys()) keys.push(`b${sep}${id}`);
  for (const id of writes.files.keys()) keys.push(`f${sep}${id}`);
  for (const { accountId, key } of writes.idempotency.values()) keys.push(`i${sep}${accountId}${sep}${key}`);
  for (const [id, delta] of writes.queuedDeltas) if (delta > 0) keys.push(`q${sep}${id}`);
  for (const [id, delta] of writes.accountDeltas) if (delta > 0) keys.push(`n${sep}${id}`);
  for (const [, delta] of writes.processingDeltas) if (delta > 0) keys.push(claimsKey);
  return keys;
};

/** Takes the locks of `keys`, waiting, in the order of their hashes (step 1 above). */
export const lockAll = (query: Query, keys: readonly string[]) =>
  query({
    text: `SELECT pg_advisory_xact_lock($1::int, h)
      FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h) AS locks`,
    values: [lockSpace.entity, [...keys]],
  });

/** Tries the locks of `keys` without waiting (step 2 above): whether all were taken. */
export const tryLockAll = async (query: Query, keys: readonly string[]): Promise<boolean> => {
  const [row] = await query<{ taken: boolean }[]>({
    text: `SELECT bool_and(pg_try_advisory_xact_lock($1::int, h)) AS taken
      FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest($2::text[]) AS k ORDER BY h) AS locks`,
    values: [lockSpace.entity, [...keys]],
  });
  return row?.taken !== false;
};

/** Thrown inside a batch's transaction when a lock it needs is held elsewhere: start again, taking `keys` first. */
export class LocksNeeded extends Error {
  constructor(readonly keys: readonly string[]) {
    super('a batch needs locks held by another transaction');
  }
}
