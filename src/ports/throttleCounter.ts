/** The login and signup throttles' counts of costly tries, as the store keeps them (ThrottleCounter). */

/**
 * A costly try (a password to hash) counted under each of its keys (`email:…`, `address:…`) of a throttle (`scope`:
 * `login`, `signup`): at most `max` per key in any `windowMs`.
 */
export type ThrottleAsk = {
  readonly scope: string;
  readonly keys: readonly string[];
  readonly max: number;
  readonly windowMs: number;
  readonly now: number;
};

/** The place a try took (at `at`, under each of `keys`). */
export type ThrottlePlace = {
  readonly scope: string;
  readonly keys: readonly string[];
  readonly at: number;
  readonly windowMs: number;
};

/** No place: a key is full; the first place frees in `retryAfterMs`. */
export type ThrottleRefused = { readonly retryAfterMs: number };

/**
 * The login and signup throttles' counts of costly tries, kept by the store so that every server counts the same
 * tries. Like `spend`, not durable like the log (a machine's crash may forget them), and bounded: what left its
 * window is dropped.
 */
export interface ThrottleCounter {
  /** Takes a place at `ask.now` under every key, or none (refused). */
  reserve(ask: ThrottleAsk): Promise<ThrottleRefused | undefined>;
  /** Gives a place back (the try cost nothing after all). */
  release(place: ThrottlePlace): Promise<void>;
  /** Forgets every try counted under `key`. */
  forget(scope: string, key: string): Promise<void>;
}
