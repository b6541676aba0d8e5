import type { ClockShape } from '../ports/Clock.js';

/**
 * Costly attempts (a password to hash), counted per key (`email:…`, `address:…`): at most `maxAttempts` in any
 * `windowMs`. An attempt takes its place **before** its cost is paid (`reserve`), so however many arrive at once, no
 * more than `maxAttempts` per key are ever let through; the attempt then keeps its place (it counts), gives it back
 * (it cost nothing after all), or, for a login that turned out right, clears the email's count.
 *
 * Kept in memory (a restart forgets it, which costs an attacker a restart they cannot cause) and bounded in size.
 */
export type AttemptLimits = {
  readonly maxAttempts: number;
  readonly windowMs: number;
  readonly maxTracked: number;
};

/** Refused: try again in `retryAfterMs`. */
export type Throttled = { readonly throttled: true; readonly retryAfterMs: number };

/** An attempt's place in the window of each of its keys. */
export type Reservation = {
  /** The attempt cost nothing after all (it was refused before hashing): its places are given back. */
  release(): void;
  /** Forgets every attempt counted against `key` (a login that was right clears its email's count). */
  forget(key: string): void;
};

export const isThrottled = (value: unknown): value is Throttled =>
  typeof value === 'object' && value !== null && 'throttled' in value;

export const createAttemptThrottle = (clock: ClockShape, limits: AttemptLimits) => {
  const attempts = new Map<string, number[]>();
  const recent = (key: string, now: number) => (attempts.get(key) ?? []).filter((at) => at > now - limits.windowMs);
  const store = (key: string, times: number[]) => {
    attempts.delete(key);
    if (times.length === 0) return;
    attempts.set(key, times);
    // The oldest entries go first (a Map keeps insertion order): memory stays bounded under a spray of emails.
    if (attempts.size > limits.maxTracked) attempts.delete(attempts.keys().next().value as string);
  };

  return {
    /** Takes a place for one attempt under every key, or says how long to wait when any key has none left. */
    reserve(keys: readonly string[]): Reservation | Throttled {
      const now = clock.now();
      let wait = 0;
      for (const key of keys) {
        const times = recent(key, now);
        if (times.length >= limits.maxAttempts) wait = Math.max(wait, (times[0] as number) + limits.windowMs - now, 1);
      }
      if (wait > 0) return { throttled: true, retryAfterMs: wait };
      for (const key of keys) store(key, [...recent(key, now), now]);
      const held = new Set(keys);
      return {
        release() {
          for (const key of held) {
            const times = attempts.get(key) ?? [];
            const at = times.lastIndexOf(now);
            if (at >= 0) store(key, [...times.slice(0, at), ...times.slice(at + 1)]);
          }
          held.clear();
        },
        forget(key) {
          attempts.delete(key);
          held.delete(key);
        },
      };
    },
  };
};

export type AttemptThrottle = ReturnType<typeof createAttemptThrottle>;

/** Failed dashboard logins (product contract 9): 5 per email and per client address in 15 minutes. */
export const loginLimits: AttemptLimits = { maxAttempts: 5, windowMs: 15 * 60_000, maxTracked: 100_000 };

/** Signups per client address (product contract 15): `dashboard.signupsPerHour` in an hour. */
export const signupLimits = (perHour: number): AttemptLimits => ({
  maxAttempts: perHour,
  windowMs: 3_600_000,
  maxTracked: 100_000,
});
