import { isRefusal } from '../../domain/commands.js';
import type { ClockShape } from '../../ports/Clock.js';
import type { CommitterShape } from '../Committer.js';
import type { Attempt } from './attempts.js';

/**
 * Keeps the leases of this process's attempts alive: every third of a lease, one extension per attempt running (all in
 * one batch). An extension the machine refuses means the attempt is no longer this process's to finish (its request
 * was cancelled or expired, or, after a long stall of this process, another worker took it over): its call is
 * aborted, as its outcome would be refused anyway.
 */
export const createLeaseKeeper = (deps: {
  readonly committer: CommitterShape;
  readonly clock: ClockShape;
  readonly owner: string;
  readonly leaseMs: number;
  readonly running: () => Iterable<Attempt>;
  readonly lost: (reqId: string) => void;
}) => {
  const renew = () => {
    const now = deps.clock.now();
    for (const { reqId, attempt } of deps.running()) {
      void deps.committer
        .send({ type: 'ExtendLease', reqId, owner: deps.owner, attempt, leaseMs: deps.leaseMs, now })
        .then(
          (outcome) => {
            if (isRefusal(outcome)) deps.lost(reqId);
          },
          // A failed write is tried again at the next renewal; the lease has two more thirds to go.
          () => {},
        );
    }
  };
  const timer = setInterval(renew, Math.max(1, Math.floor(deps.leaseMs / 3)));
  timer.unref();
  return { stop: () => clearInterval(timer), renew };
};
