import type { H3Event } from 'h3';
import type { AuthShape, Principal } from '../../app/Auth.js';
import type { BudgetName, RateLimiterShape, RateLimitStatus } from '../../app/RateLimiter.js';
import type { ApiError } from '../../domain/errors.js';
import { noteAccess } from './accessNote.js';
import { isApiError } from './errorResponse.js';
import type { HeaderBag } from './route.js';

/** The IETF draft RateLimit headers (structured-field form) for one budget. */
const rateLimitHeaders = (status: RateLimitStatus, headers: HeaderBag) => {
  headers['RateLimit-Policy'] = `"${status.budget}";q=${status.limit};w=${status.windowSeconds}`;
  headers.RateLimit = `"${status.budget}";r=${status.remaining};t=${status.resetSeconds}`;
};

/** Auth, then the rate limit: the front every API call passes, in the contract's order. */
export type Admit = (
  event: H3Event,
  budget: BudgetName,
  headers: HeaderBag,
  refusesNow?: () => ApiError | undefined,
) => Promise<Principal | ApiError>;

/** Auth and rate limit, the shared front of every endpoint. Headers gathered here go on every answer. */
export const createAdmit =
  (deps: { readonly auth: AuthShape; readonly rateLimiter: RateLimiterShape }): Admit =>
  async (event, budget, headers, refusesNow) => {
    const principal = await deps.auth.authenticate(event.req.headers.get('authorization'));
    if (isApiError(principal)) return principal;
    noteAccess(event, { account: principal.accountId });
    // A submit the server would refuse whatever its body (processing/admission.ts) is refused before it spends the
    // caller's budget and before its body is read: under a flood, a refusal must cost the workers little.
    const refused = refusesNow?.();
    if (refused !== undefined) return refused;
    const spent = await deps.rateLimiter.take(principal, budget);
    rateLimitHeaders(spent.status, headers);
    return spent.refusal ?? principal;
  };
