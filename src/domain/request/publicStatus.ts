import { isExpired } from './questions.js';
import type { RequestState } from './state.js';

/** What a poll may reveal of a request at time `now`: the contract's public statuses, or why it is hidden. */
export type PublicStatus = 'unknown' | 'expired' | 'queued' | 'completed' | 'failed' | 'cancelled';

/**
 * Expiry is counted from creation and holds from the very millisecond the TTL runs out,
 * whether or not the sweeper has written `RequestExpired` yet (the machine says when: questions.ts).
 */
export const publicStatus = (state: RequestState | undefined, now: number): PublicStatus => {
  if (state === undefined || state.status === 'none') return 'unknown';
  if (isExpired(state, now)) return 'expired';
  if (state.status === 'completed') return 'completed';
  if (state.status === 'failed') return 'failed';
  if (state.status === 'cancelled') return 'cancelled';
  return 'queued';
};
