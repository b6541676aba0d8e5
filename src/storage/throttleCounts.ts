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

/** Most throttle keys a store keeps at once (about 100 bytes each); beyond it, those changed longest ago go. */
export const maxThrottleKeys = 200_000;

/** A key under its throttle's scope: `login` and `signup` count apart. */
export const scopedKey = (scope: string, key: string) => `${scope}\u0000${key}`;

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
