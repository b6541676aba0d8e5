import type { ClockShape } from '../ports/Clock.js';

/**
 * Failed dashboard logins, counted per email and per client address: after `maxFailures` in `windowMs`, further
 * attempts on that email or from that address are refused until the oldest failure leaves the window. Kept in
 * memory (a restart forgets it, which costs an attacker a restart they cannot cause) and bounded in size.
 */
export type LoginThrottleLimits = {
  readonly maxFailures: number;
  readonly windowMs: number;
  readonly maxTracked: number;
};

export const defaultLoginThrottleLimits: LoginThrottleLimits = {
  maxFailures: 5,
  windowMs: 15 * 60_000,
  maxTracked: 100_000,
};

export const createLoginThrottle = (clock: ClockShape, limits: LoginThrottleLimits = defaultLoginThrottleLimits) => {
  const failures = new Map<string, number[]>();
  const recent = (key: string, now: number) => (failures.get(key) ?? []).filter((at) => at > now - limits.windowMs);

  return {
    /** How long to wait before another attempt for these keys (`email:…`, `address:…`), 0 when one may be made. */
    waitMs(keys: readonly string[]): number {
      const now = clock.now();
      let wait = 0;
      for (const key of keys) {
        const times = recent(key, now);
        if (times.length >= limits.maxFailures) wait = Math.max(wait, (times[0] as number) + limits.windowMs - now);
      }
      return wait;
    },
    failed(keys: readonly string[]): void {
      const now = clock.now();
      for (const key of keys) {
        const times = recent(key, now);
        times.push(now);
        failures.delete(key);
        failures.set(key, times);
        // The oldest entries go first (a Map keeps insertion order): memory stays bounded under a spray of emails.
        if (failures.size > limits.maxTracked) failures.delete(failures.keys().next().value as string);
      }
    },
    /** A success forgets the email's failures (the address's stay: one good login must not unlock a spray). */
    succeeded(emailKey: string): void {
      failures.delete(emailKey);
    },
  };
};

export type LoginThrottle = ReturnType<typeof createLoginThrottle>;
