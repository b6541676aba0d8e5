import type { ThrottleAsk, ThrottlePlace, ThrottleRefused } from '../ports/Store.js';

/*
 * The login and signup throttles' counts (app/throttle.ts), decided inside a store's write: each key's recent tries in
 * its window. Tries, not attempts: an attempt is a request's (the request machine's) or a webhook delivery's.
 */

/** One key's tries still in its window (times in ms, oldest first), and when the newest leaves the window. */
export type ThrottleEntry = { readonly times: readonly number[]; readonly expiresAt: number };

/** What an adapter keeps tries in; the functions below run inside one of its writes. */
export type ThrottleTable = {
  readonly get: (key: string) => ThrottleEntry | undefined;
  readonly put: (key: string, entry: ThrottleEntry, before: ThrottleEntry | undefined) => void;
  readonly remove: (key: string, before: ThrottleEntry) => void;
};

/** Most throttle keys a store keeps at once (about 100 bytes each); beyond it, those soonest to leave go. */
export const maxThrottleKeys = 200_000;

/** Keys a reservation drops at most, of those whose tries have all left their window. */
export const throttlePrunePerReserve = 16;

/** A store's throttle keys in the order they leave their window (by `expiresAt`, then by key): what pruning reads. */
export type ThrottleExpiryIndex = {
  /** Throttle keys kept now. */
  readonly size: () => number;
  /** The first `limit` keys in that order, with when each leaves its window. */
  readonly soonest: (limit: number) => Iterable<readonly [expiresAt: number, key: string]>;
  /** Forgets a key, its tries and its place in the order. */
  readonly drop: (key: string, expiresAt: number) => void;
};

/**
 * Runs before a reservation, in its write: drops the keys whose tries have all left their window, at most
 * `throttlePrunePerReserve` of them (so the keys stay bounded by recent activity at a small cost per reservation), then,
 * while more than `maxKeys` are kept, those soonest to leave (so a spray of new emails or addresses cannot grow them
 * past the bound). A key the reservation counts under (`keep`, scoped) is never dropped by it. PostgreSQL states the
 * same rule in SQL (PostgresStore.ts, `withAttempts`).
 */
export const pruneThrottleKeys = (
  index: ThrottleExpiryIndex,
  now: number,
  keep: readonly string[],
  maxKeys: number = maxThrottleKeys,
) => {
  const size = index.size();
  const kept = new Set(keep);
  const candidates = Array.from(
    index.soonest(throttlePrunePerReserve + Math.max(0, size - maxKeys) + kept.size),
  ).filter(([, key]) => !kept.has(key));
  let expired = 0;
  while (expired < throttlePrunePerReserve && (candidates[expired]?.[0] ?? Number.POSITIVE_INFINITY) <= now)
    expired += 1;
  const over = Math.max(0, size - expired - maxKeys);
  for (const [expiresAt, key] of candidates.slice(0, expired + over)) index.drop(key, expiresAt);
};

/** A key under its throttle's scope: `login` and `signup` count apart. */
export const scopedKey = (scope: string, key: string) => `${scope}\u0000${key}`;

/** Every key of a try, under its scope. */
export const scopedKeys = (ask: { readonly scope: string; readonly keys: readonly string[] }) =>
  ask.keys.map((key) => scopedKey(ask.scope, key));

const inWindow = (times: readonly number[], now: number, windowMs: number) => times.filter((at) => at > now - windowMs);

/**
 * Takes a place at `ask.now` under every key, or none: refused (with how long until the first key frees a place)
 * when any key already holds `ask.max` tries in the window.
 */
export const reserveThrottlePlace = (ask: ThrottleAsk, table: ThrottleTable): ThrottleRefused | undefined => {
  const entries = ask.keys.map((key) => {
    const scoped = scopedKey(ask.scope, key);
    const before = table.get(scoped);
    return { scoped, before, recent: inWindow(before?.times ?? [], ask.now, ask.windowMs) };
  });
  let wait = 0;
  for (const { recent } of entries) {
    if (recent.length >= ask.max) wait = Math.max(wait, (recent[0] as number) + ask.windowMs - ask.now, 1);
  }
  if (wait > 0) return { retryAfterMs: wait };
  for (const { scoped, before, recent } of entries) {
    table.put(scoped, { times: [...recent, ask.now], expiresAt: ask.now + ask.windowMs }, before);
  }
  return undefined;
};

/** Gives back the place a try took under each of its keys (it cost nothing after all). */
export const releaseThrottlePlace = (place: ThrottlePlace, table: ThrottleTable) => {
  for (const key of place.keys) {
    const scoped = scopedKey(place.scope, key);
    const before = table.get(scoped);
    if (before === undefined) continue;
    const at = before.times.lastIndexOf(place.at);
    if (at < 0) continue;
    const times = [...before.times.slice(0, at), ...before.times.slice(at + 1)];
    if (times.length === 0) table.remove(scoped, before);
    else table.put(scoped, { times, expiresAt: (times.at(-1) as number) + place.windowMs }, before);
  }
};

/** Forgets every try counted under a key (a login that was right clears its email's failures). */
export const forgetThrottleKey = (scope: string, key: string, table: ThrottleTable) => {
  const scoped = scopedKey(scope, key);
  const before = table.get(scoped);
  if (before !== undefined) table.remove(scoped, before);
};
