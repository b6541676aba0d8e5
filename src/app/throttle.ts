import type { ClockShape } from '../ports/Clock.js';
import type { ThrottleCounter } from '../ports/Store.js';

/**
 * The login and signup throttles: costly tries (a password to hash), counted per key (`email:…`, `address:…`): at
 * most `maxTries` in any `windowMs`. A try takes its place **before** its cost is paid (`reserve`), so however many
 * arrive at once, on however many servers, no more than `maxTries` per key are ever let through; the try then keeps
 * its place (it counts), gives it back (it cost nothing after all), or, for a login that turned out right, clears the
 * email's count. (Tries, not attempts: an attempt is a request's, or a webhook delivery's.)
 *
 * The counts are the store's (`store.throttle`, decided inside its writes by storage/throttleCounts.ts): every server
 * of one store counts the same tries. Like the rate limits they are not durable like the log: a reboot of the
 * machine forgets them.
 */
export type ThrottleLimits = { readonly maxTries: number; readonly windowMs: number };

/** Refused: try again in `retryAfterMs`. */
export type Throttled = { readonly throttled: true; readonly retryAfterMs: number };

/** A try's place in the window of each of its keys. */
export type Reservation = {
  /** The try cost nothing after all (it was refused before hashing): its places are given back. */
  release(): Promise<void>;
  /** Forgets every try counted against `key` (a login that was right clears its email's count). */
  forget(key: string): Promise<void>;
};

export const isThrottled = (value: unknown): value is Throttled =>
  typeof value === 'object' && value !== null && 'throttled' in value;

export const createThrottle = (counter: ThrottleCounter, clock: ClockShape, scope: string, limits: ThrottleLimits) => ({
  /** Takes a place for one try under every key, or says how long to wait when any key has none left. */
  async reserve(keys: readonly string[]): Promise<Reservation | Throttled> {
    const at = clock.now();
    const { maxTries: max, windowMs } = limits;
    const refused = await counter.reserve({ scope, keys, max, windowMs, now: at });
    if (refused !== undefined) return { throttled: true, retryAfterMs: refused.retryAfterMs };
    const held = new Set(keys);
    return {
      release: () => counter.release({ scope, keys: [...held], at, windowMs }),
      async forget(key) {
        held.delete(key);
        await counter.forget(scope, key);
      },
    };
  },
});

export type Throttle = ReturnType<typeof createThrottle>;

/** Failed dashboard logins (product contract 9): 5 per email and per client address in 15 minutes. */
export const loginLimits: ThrottleLimits = { maxTries: 5, windowMs: 15 * 60_000 };

/** Signups per client address (product contract 15): `dashboard.signupsPerHour` in an hour. */
export const signupLimits = (perHour: number): ThrottleLimits => ({ maxTries: perHour, windowMs: 3_600_000 });
