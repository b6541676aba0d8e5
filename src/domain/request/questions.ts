import { canApply, type RequestState } from './state.js';

/**
 * The lifecycle questions asked outside the machine, each answered by asking the machine whether it would accept the
 * event in question now: so no caller restates a rule (the poll, the dashboard, the cancel of the API and of the CLI,
 * the idempotency window, the claim).
 */

/**
 * A request is expired at `now` once the log says so, or from the very millisecond its lifetime runs out, whether or
 * not the sweeper has written `RequestExpired` yet: the machine would accept its expiry then.
 */
export const isExpired = (state: RequestState, now: number): boolean =>
  state.status === 'expired' || canApply(state, { type: 'RequestExpired', reqId: state.context.reqId, at: now });

/** A cancellation at `now` would be accepted: the request is queued or being processed, and not expired. */
export const isCancellable = (state: RequestState, now: number): boolean =>
  canApply(state, { type: 'RequestCancelled', reqId: state.context.reqId, at: now });

/** Its deadline has come and it has not ended: a cancel for the deadline at `now` would be accepted. */
export const isPastDeadline = (state: RequestState, now: number): boolean =>
  canApply(state, { type: 'RequestCancelled', reqId: state.context.reqId, at: now, reason: 'deadline' });
