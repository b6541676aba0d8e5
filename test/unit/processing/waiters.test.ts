import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createWaiters } from '../../../src/app/processing/waiters.js';

/** Whether `promise` has settled once pending callbacks have run (without letting simulated time pass). */
const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await vi.advanceTimersByTimeAsync(0);
  return done;
};

describe('Callers waiting for a request’s outcome in this process', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('are all told when an outcome of their request is durable, and callers of another request are not', async () => {
    const waiters = createWaiters();
    const first = waiters.wait('req_a', 60_000);
    const second = waiters.wait('req_a', 60_000);
    const other = waiters.wait('req_b', 60_000);
    waiters.tell('req_a');
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(true);
    expect(await settled(other)).toBe(false);
    // Told callers leave no timer behind; the one still waiting keeps its own.
    expect(vi.getTimerCount()).toBe(1);
    waiters.tell('req_b');
    expect(await settled(other)).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('stop waiting when their timeout passes, and not before', async () => {
    const waiters = createWaiters();
    const waiting = waiters.wait('req_a', 5_000);
    await vi.advanceTimersByTimeAsync(4_999);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(waiting)).toBe(true);
    // The next caller of the same request waits afresh: the one that timed out was forgotten.
    const next = waiters.wait('req_a', 5_000);
    expect(await settled(next)).toBe(false);
    waiters.tell('req_a');
    expect(await settled(next)).toBe(true);
  });

  it('stop waiting when their signal aborts, or at once when it already has, leaving no timer behind', async () => {
    const waiters = createWaiters();
    const abort = new AbortController();
    const waiting = waiters.wait('req_a', 60_000, abort.signal);
    const staying = waiters.wait('req_a', 60_000);
    expect(await settled(waiting)).toBe(false);
    abort.abort();
    expect(await settled(waiting)).toBe(true);
    expect(await settled(staying)).toBe(false);
    expect(await settled(waiters.wait('req_b', 60_000, abort.signal))).toBe(true);
    expect(vi.getTimerCount()).toBe(1);
    waiters.tell('req_a');
    expect(await settled(staying)).toBe(true);
  });
});
