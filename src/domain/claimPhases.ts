import type { LaneKind } from './dispatchLane.js';

/**
 * The claim's phases, one per service tier (contract 20), highest first: 0 priority (with `default` requests that
 * have waited `promoteAfterMs` since they became available), 1 default (with batches' lines within their share), 2
 * flex (with the rest of the lines). The claim (claimFairly.ts) starts them in this order, and a queue position
 * (queuePosition.ts) counts by it.
 */
export type ClaimPhase = 0 | 1 | 2;

/**
 * The phase in which a lane's due entry starts; a batch's line: `batchWithinShare` says whether batches hold less than
 * their share of its model's workers (phase 1), else phase 2. Along a lane the phase never decreases (a default lane's
 * promoted entries are the ones available earliest).
 */
export const phaseOfEntry = (
  kind: LaneKind,
  availableAt: number,
  now: number,
  promoteAfterMs: number | undefined,
  batchWithinShare = true,
): ClaimPhase => {
  switch (kind) {
    case 'priority':
      return 0;
    case 'default':
      return promoteAfterMs !== undefined && now - availableAt >= promoteAfterMs ? 0 : 1;
    case 'batch':
      return batchWithinShare ? 1 : 2;
    case 'flex':
      return 2;
  }
};

/** The earliest phase a lane of this kind can have anything for: a lane is not read before it. */
export const laneOpensAt = (kind: LaneKind, promoteAfterMs: number | undefined): ClaimPhase =>
  kind === 'priority' || (kind === 'default' && promoteAfterMs !== undefined) ? 0 : kind === 'flex' ? 2 : 1;
