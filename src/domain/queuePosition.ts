import type { DispatchReads } from './claimFairly.js';
import { laneOpensAt, phaseOfEntry } from './claimPhases.js';
import { dispatchLaneOf, type LaneKind, laneKindOf } from './dispatchLane.js';
import type { RequestContext } from './request/context.js';

/** The most a queue position says (contract 20): `10000` means at least that many go first. */
export const queuePositionCap = 10_000;

/** A waiting request whose place in the queue is asked: where the dispatch index holds it. */
export type QueuedRequest = {
  readonly reqId: string;
  /** Its dispatch lane (dispatchLane.ts). */
  readonly lane: string;
  readonly model: string;
  readonly availableAt: number;
};

/** Where the dispatch index holds a waiting request, from its context (projection.ts's dispatch key). */
export const queuedRequestOf = (context: RequestContext): QueuedRequest => ({
  reqId: context.reqId,
  lane: dispatchLaneOf(context),
  model: context.model,
  availableAt: context.availableAt,
});

/** How far into one other lane the count looks, whatever the lane holds (its entries of other models included). */
export const laneScanLimit = queuePositionCap;

/**
 * A waiting request's `queue_position` (contract 20): how many due requests (available at `now`) of its model the
 * workers would start before it if nothing new arrived, `0` when it is next, at most `cap` (then: at least that many).
 * It follows the claim's own order (claimFairly.ts), approximately:
 * - the due entries of its model ahead of it in its own lane all count (a lane's entries go in the order they became
 *   available), `k` of them in its own phase;
 * - in every other lane, the due entries of its model that the claim starts in an earlier phase (a higher tier, or a
 *   `default` request promoted after `promoteAfterMs`) all count; those of its own phase count up to `k` (lanes take
 *   turns, one entry each per round, so each goes at most `k` times before the request's turn); later phases count
 *   nothing.
 * What it leaves out, so that the position is an estimate and may move either way: where the round robin starts (it is
 * each process's own: lanes before the request's in the turn may go once more), the batches' share (a line beyond it
 * waits for flex's phase; here it counts as default work), accounts' limits and shares of a model (work passed over
 * for them goes later), entries of other models (they wait for their own model's workers), promotion while it waits
 * (a `default` request that becomes promoted moves up), requests that arrive later in an earlier phase, and work not
 * due yet (a retry's backoff). A request not due itself is placed as if it were.
 * Cost: the lanes with work are listed once, and each is read at most once (one `queuedOf`; an account has at most four
 * lanes: default, priority, flex, batch), not at all when it opens after the request's phase, and only as far as
 * it can still count (due, of a phase not after the request's, its own phase fewer than `k`), `laneScanLimit`
 * entries deep at most, and no further once the count reaches `cap`. Undefined when the request is not in its lane
 * (started, or no longer waiting).
 */
export const queuePositionOf = (
  reads: DispatchReads,
  request: QueuedRequest,
  now: number,
  promoteAfterMs: number | undefined,
  cap: number = queuePositionCap,
): number | undefined => {
  const ownKind = laneKindOf(request.lane);
  const mine = phaseOfEntry(ownKind, request.availableAt, now, promoteAfterMs);
  let total = 0;
  let k = 0;
  let found = false;
  for (const entry of reads.queuedOf(request.lane)) {
    if (entry.reqId === request.reqId) {
      found = true;
      break;
    }
    if (entry.model !== request.model || entry.availableAt > now) continue;
    total++;
    if (phaseOfEntry(ownKind, entry.availableAt, now, promoteAfterMs) === mine) k++;
    if (total >= cap) return cap;
  }
  if (!found) return undefined;
  for (const lane of reads.queuedAccounts(undefined)) {
    if (lane === request.lane) continue;
    const kind = laneKindOf(lane);
    if (laneOpensAt(kind, promoteAfterMs) > mine) continue;
    let same = 0;
    let scanned = 0;
    for (const entry of reads.queuedOf(lane)) {
      if (++scanned > laneScanLimit || entry.availableAt > now) break;
      const phase = phaseOfEntry(kind, entry.availableAt, now, promoteAfterMs);
      // The lane's later entries start no earlier.
      if (phase > mine) break;
      if (entry.model !== request.model) continue;
      if (phase === mine) {
        if (same >= k) break;
        same++;
      }
      if (++total >= cap) return cap;
    }
  }
  return total;
};

/**
 * The same count from tallies read elsewhere (PostgreSQL counts in SQL): for the request's own lane, its due entries
 * of the model ahead of it; for each other lane, its due entries of the model; each with how many of them a default
 * lane has had waiting `promoteAfterMs` (`promoted`). Each tally may stop at `cap`.
 */
export const queuePositionFromTallies = (
  request: QueuedRequest,
  own: { readonly ahead: number; readonly promoted: number },
  lanes: Iterable<{ readonly lane: string; readonly due: number; readonly promoted: number }>,
  now: number,
  promoteAfterMs: number | undefined,
  cap: number = queuePositionCap,
): number => {
  const ownKind = laneKindOf(request.lane);
  const mine = phaseOfEntry(ownKind, request.availableAt, now, promoteAfterMs);
  const byPhase = (kind: LaneKind, due: number, promoted: number): readonly [number, number, number] => {
    const counts: [number, number, number] = [0, 0, 0];
    if (kind === 'default') {
      const early = promoteAfterMs === undefined ? 0 : Math.min(promoted, due);
      counts[0] = early;
      counts[1] = due - early;
    } else counts[phaseOfEntry(kind, now, now, promoteAfterMs)] = due;
    return counts;
  };
  // Its own lane: all ahead go first, `k` of them in its phase.
  const k = byPhase(ownKind, own.ahead, own.promoted)[mine];
  let total = own.ahead;
  for (const { lane, due, promoted } of lanes) {
    if (total >= cap) break;
    if (lane === request.lane) continue;
    const counts = byPhase(laneKindOf(lane), due, promoted);
    for (let phase = 0; phase < mine; phase++) total += counts[phase] ?? 0;
    total += Math.min(counts[mine], k);
  }
  return Math.min(total, cap);
};
