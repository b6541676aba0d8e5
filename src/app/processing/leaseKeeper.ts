import type { ClockShape } from '../../ports/Clock.js';
import type { WorkQueueShape } from '../../ports/WorkQueue.js';

/**
 * Keeps the leases of this process's attempts, and knows when one may be gone. Every third of a lease, one extension
 * per attempt held; an attempt's lease is known to last until the end the last durable start or extension gave it.
 *
 * - An extension the machine refuses means the attempt is no longer this process's to finish (its request was
 *   cancelled or expired, or another worker took it over): `refused` (its call is aborted, its outcome would be
 *   refused anyway).
 * - A lease with a third or less left that no extension renewed (the store's writes are that slow, or failing) is
 *   given up before it ends: `lapsing` (its call is aborted and nothing is recorded), so that no other worker that
 *   takes the request over once the lease ended finds this one still calling the model.
 */
export const createLeaseKeeper = (deps: {
  readonly queue: WorkQueueShape;
  readonly clock: ClockShape;
  readonly owner: string;
  readonly leaseMs: number;
  readonly refused: (reqId: string) => void;
  readonly lapsing: (reqId: string) => void;
}) => {
  const margin = Math.max(1, Math.floor(deps.leaseMs / 3));
  /** Attempts held, with the end of their lease as last made durable (undefined: not known, never given up). */
  const held = new Map<string, { readonly attempt: number; until: number | undefined }>();
  const lapsed = new Set<string>();

  /** Whether the lease has more than a third left (or is of unknown end). */
  const safe = (until: number | undefined, now: number) => until === undefined || until - now > margin;

  const giveUp = (reqId: string) => {
    if (lapsed.has(reqId)) return;
    lapsed.add(reqId);
    deps.lapsing(reqId);
  };

  const renew = () => {
    const now = deps.clock.now();
    for (const [reqId, lease] of held) {
      if (lapsed.has(reqId)) continue;
      if (!safe(lease.until, now)) {
        giveUp(reqId);
        continue;
      }
      void deps.queue.extendLease({ reqId, attempt: lease.attempt, owner: deps.owner }, deps.leaseMs, now).then(
        (stillHeld) => {
          if (!stillHeld) deps.refused(reqId);
          else if (lease.until !== undefined) lease.until = Math.max(lease.until, now + deps.leaseMs);
        },
        // A failed write is tried again at the next renewal, while the lease has time left.
        () => {},
      );
    }
  };
  const timer = setInterval(renew, margin);
  timer.unref();
  return {
    /** An attempt this process now holds, under a lease until `until` (as its durable start says). */
    hold(reqId: string, attempt: number, until: number | undefined) {
      lapsed.delete(reqId);
      held.set(reqId, { attempt, until });
    },
    /** The attempt is over (its outcome is durable, or it was given back). */
    drop(reqId: string, attempt: number) {
      // A later attempt of the same request may be held by now: it stays.
      if (held.get(reqId)?.attempt !== attempt) return;
      held.delete(reqId);
      lapsed.delete(reqId);
    },
    /**
     * Gives the attempt's lease up if it has a third or less left (as the renewals would), and says whether it is given
     * up: then its model must not be called, its outcome not recorded.
     */
    giveUpIfLapsing(reqId: string): boolean {
      if (lapsed.has(reqId)) return true;
      const lease = held.get(reqId);
      if (lease === undefined || safe(lease.until, deps.clock.now())) return false;
      giveUp(reqId);
      return true;
    },
    /** Whether the attempt's lease was given up (its call was aborted for that). */
    gaveUp: (reqId: string): boolean => lapsed.has(reqId),
    stop: () => clearInterval(timer),
    renew,
  };
};
