import { isQueued, type RequestState } from './request/state.js';

/**
 * What an account's count of queued requests counts (`cnt.queued`, `queued_counts`: what `plans.<plan>.maxQueued`
 * bounds): its interactive requests waiting or being processed. A batch's lines do not count: a batch would
 * otherwise lock its own account out of interactive calls for as long as it runs. They have bounds of their own:
 * `batches.maxLinesAhead` lines queued and not ended per batch, `maxBatchesInProgress` batches per account, and the
 * room for their answers (`maxFileStorageBytes`), all decided in the store's write.
 */
export const countsAsQueued = (state: RequestState): boolean =>
  state.context.batchId === undefined && isQueued(state.status);

/** How a change from `before` to `after` moves its account's count of queued requests (-1, 0 or 1). */
export const queuedDelta = (before: RequestState, after: RequestState): number =>
  Number(countsAsQueued(after)) - Number(countsAsQueued(before));

const grouped = new Intl.NumberFormat('en-US');

/** The refusal's words: the account's count (what it has now) and its plan's bound, digits grouped (1,900). */
export const queueFullMessage = (count: number, maxQueued: number, plan = 'its plan'): string =>
  `the queue is full: this account already has ${grouped.format(count)} requests waiting or being processed ` +
  `(${plan} allows ${grouped.format(maxQueued)}); wait for some to finish (or cancel some) and retry`;
