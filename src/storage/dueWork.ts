import { scanLimit } from '../domain/claimFairly.js';
import type { DueWork } from '../ports/Store.js';
import type { SyncReads } from './syncReads.js';

/**
 * For the read model's `dueWork`, in one pass (the dispatcher asks after every batch of outcomes):
 * - `now`: whether a claim could take anything now, a waiting request that is available or a request whose lease
 *   lapsed. Read before a claim is written, so that an idle pool does not write empty claims.
 * - `next`: the earliest time after `now` at which work becomes due without anything else happening, a waiting
 *   request's availability (the end of a retry's backoff) or a lease's end (its worker may have died). Work due
 *   already but not taken (its model at its bound) is taken when a worker of that model ends, not by this timer.
 */
export const dueWorkOf = (reads: SyncReads, now: number): DueWork => {
  let dueNow = false;
  let earliest: number | undefined;
  const consider = (at: number) => {
    if (at > now && (earliest === undefined || at < earliest)) earliest = at;
  };
  for (const accountId of reads.queuedAccounts(undefined)) {
    let scanned = 0;
    for (const entry of reads.queuedOf(accountId)) {
      if (entry.availableAt > now) {
        consider(entry.availableAt);
        break;
      }
      dueNow = true;
      if (++scanned >= scanLimit) break;
    }
  }
  // The lease index is read once, unless a lease has lapsed: then as before, what lapsed and what ends next.
  const firstLeaseEnd = reads.nextLeaseEnd(Number.MIN_SAFE_INTEGER);
  if (firstLeaseEnd !== undefined && firstLeaseEnd <= now) {
    if (reads.lapsedLeases(now, 1).length > 0) dueNow = true;
    const leaseEnd = reads.nextLeaseEnd(now);
    if (leaseEnd !== undefined) consider(leaseEnd);
  } else if (firstLeaseEnd !== undefined) consider(firstLeaseEnd);
  return { now: dueNow, next: earliest };
};
