import type { H3Event } from 'h3';
import { type AdminPrincipal, authenticateAdmin } from '../../../app/adminKeys.js';
import { isThrottled, type Throttle, type ThrottleLimits } from '../../../app/throttle.js';
import { type ApiError, RateLimited } from '../../../domain/errors.js';
import type { ReadModel } from '../../../ports/Store.js';
import type { HeaderBag, Route } from '../route.js';

/** A route of the admin API: called only with an admin key that is valid now. */
export type AdminRoute = (event: H3Event, headers: HeaderBag, admin: AdminPrincipal) => Promise<Response | ApiError>;

/** Failed admin authentications per client address: 10 in 15 minutes (the dashboard's login allows 5 per email). */
export const adminAuthLimits: ThrottleLimits = { maxTries: 10, windowMs: 15 * 60_000 };

export type AdminGuardDeps = {
  readonly reads: ReadModel;
  /** Counts failed admin authentications (`createThrottle(store.throttle, clock, 'admin', adminAuthLimits)`). */
  readonly throttle: Throttle;
};

/** The address throttles count against: the socket's peer, as the dashboard's login counts it. */
const clientAddress = (event: H3Event): string => (event.req as { ip?: string }).ip ?? 'unknown';

/**
 * What stands before every `/v1/admin/*` route: an admin key, or the call is refused (none, unknown or revoked:
 * `401`; an account's key: `403`). Every try takes a place in its client address's throttle before the key is
 * looked at, and a good key gives it back: so only failures count, and however many arrive at once no address gets
 * more than `adminAuthLimits` of them; past it every call from there answers `429` with `Retry-After`, as the
 * dashboard's login does. Wrap the result in the API's guard (guard.ts) as any route: `guard(adminGuard(route), slot)`.
 */
export const createAdminGuard =
  (deps: AdminGuardDeps) =>
  (route: AdminRoute): Route =>
  async (event, headers) => {
    const place = await deps.throttle.reserve([`address:${clientAddress(event)}`]);
    if (isThrottled(place)) {
      const retryAfterSeconds = Math.max(1, Math.ceil(place.retryAfterMs / 1000));
      return new RateLimited({
        message: `too many failed admin authentications from this address; retry in ${retryAfterSeconds} seconds`,
        retryAfterSeconds,
        budget: 'admin_auth',
      });
    }
    const admin = await authenticateAdmin(deps.reads, event.req.headers.get('authorization'));
    if (!('adminKeyId' in admin)) return admin;
    await place.release();
    return route(event, headers, admin);
  };

export type AdminGuard = ReturnType<typeof createAdminGuard>;
