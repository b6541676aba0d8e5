import type { ServiceTier } from './serviceTier.js';

/**
 * The lane of the dispatch index a waiting request is in: its account's own lane of its service tier, or, for a
 * batch's line, its account's batch lane. A claim takes lanes in turn like accounts, tier by tier (claimFairly.ts):
 * an account's priority requests never wait behind its default ones, nor its interactive requests behind its own
 * batch's thousands of lines. Account ids have no control character, so the lane's separator (U+001F) tells them
 * apart; an account's default lane is its id alone, as it was before tiers (stored lanes stay right).
 */
const separator = '\u001f';
const suffixes = { batch: `${separator}batch`, priority: `${separator}priority`, flex: `${separator}flex` } as const;

/** What a lane holds: interactive work of one tier, or batches' lines. */
export type LaneKind = ServiceTier | 'batch';

export const dispatchLaneOf = (context: {
  readonly accountId: string;
  readonly batchId?: string | undefined;
  readonly serviceTier?: 'priority' | 'flex' | undefined;
}): string => {
  if (context.batchId !== undefined) return `${context.accountId}${suffixes.batch}`;
  return context.serviceTier === undefined ? context.accountId : `${context.accountId}${suffixes[context.serviceTier]}`;
};

export const laneKindOf = (lane: string): LaneKind => {
  const at = lane.lastIndexOf(separator);
  if (at < 0) return 'default';
  const suffix = lane.slice(at);
  if (suffix === suffixes.batch) return 'batch';
  if (suffix === suffixes.priority) return 'priority';
  return suffix === suffixes.flex ? 'flex' : 'default';
};

export const isBatchLane = (lane: string): boolean => laneKindOf(lane) === 'batch';

export const accountOfLane = (lane: string): string => {
  const at = lane.lastIndexOf(separator);
  return at < 0 ? lane : lane.slice(0, at);
};
