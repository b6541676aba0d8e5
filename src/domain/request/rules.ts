import type { RequestContext } from './context.js';

/**
 * The facts the request machine's guards are made of, each written once. Events of older versions lack the lease and
 * the attempt bound: what cannot be judged from them is allowed, as it was when they were written, so old logs fold as
 * they always did.
 */

/** A request is expired from the very millisecond its lifetime runs out, whether or not the log says so yet. */
export const isExpiredAt = (context: Pick<RequestContext, 'expiresAt'>, at: number): boolean => at >= context.expiresAt;

/**
 * Its deadline has come (`Cancel-After`, contract 20): from that millisecond on it is never started, and it may be
 * cancelled for it. A request without one never reaches it.
 */
export const isPastDeadlineAt = (context: Pick<RequestContext, 'deadlineAt'>, at: number): boolean =>
  context.deadlineAt !== undefined && at >= context.deadlineAt;

/** Waiting work may be taken only once it is available (its creation, or the end of its retry backoff). */
export const isDueAt = (context: Pick<RequestContext, 'availableAt'>, at: number): boolean => at >= context.availableAt;

/** The attempt's lease has run out (its worker is presumed dead): another may take the request over. */
export const leaseLapsedAt = (context: Pick<RequestContext, 'leaseUntil'>, at: number): boolean =>
  context.leaseUntil === undefined || at >= context.leaseUntil;

/** The one who holds the current attempt: its owner, for this attempt (an earlier attempt's worker holds nothing). */
export const holdsLease = (context: Pick<RequestContext, 'owner' | 'attempts'>, claim: object): boolean => {
  if (context.owner === undefined) return true;
  const { owner, attempt } = claim as { readonly owner?: string; readonly attempt?: number };
  return owner === context.owner && (attempt === undefined || attempt === context.attempts);
};

/**
 * The process `owner` holds the current attempt's lease itself. It never takes over a lease of its own, lapsed or not:
 * what it holds it finishes or gives back itself (a lease may lapse while its holder still works, when a write took
 * longer than the lease). A start that names no owner (older versions) is never one's own.
 */
export const ownsLease = (context: Pick<RequestContext, 'owner'>, owner: string | undefined): boolean =>
  owner !== undefined && context.owner === owner;

/** Whether a failed attempt leaves another to take (`fallback`: the bound of requests that do not carry their own). */
export const attemptsRemain = (
  context: Pick<RequestContext, 'attempts' | 'maxAttempts'>,
  fallback?: number,
): boolean => {
  const max = context.maxAttempts ?? fallback;
  return max === undefined || context.attempts < max;
};
