/** Time as the client sees it: a sleep that honours abort signals, and the `Retry-After` header in milliseconds. */

import type { SleepFn } from './types.js';

/** `setTimeout` as a promise; rejects with `signal.reason` as soon as `signal` aborts. Works in browsers too. */
export const defaultSleep: SleepFn = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/**
 * `Retry-After` in milliseconds: either delay-seconds (`5`) or an HTTP date, measured against `now`. `undefined`
 * when the header is absent or unreadable; never negative.
 */
export const parseRetryAfter = (header: string | null, now: number): number | undefined => {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+(\.\d+)?$/.test(value)) return Math.round(Number(value) * 1000);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
};
