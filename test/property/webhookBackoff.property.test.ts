import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  backoffProblem,
  defaultWebhookBackoff,
  delayCeilingMs,
  nextRetryDelayMs,
  retrySchedule,
  type WebhookBackoff,
} from '../../src/domain/webhook/backoff.js';

// Issue 30, "Durable outbox": a failed delivery is tried again with exponential backoff and jitter, for up to 72 hours
// (configurable). The schedule is pure: given the same random numbers it is the same.

/** A random source that gives these numbers in turn (then the last again), as `Math.random` would give others. */
const sourceOf = (numbers: readonly number[]) => {
  let index = 0;
  return () => numbers[Math.min(index++, numbers.length - 1)] ?? 0.5;
};

const policies: fc.Arbitrary<WebhookBackoff> = fc
  .record({
    minDelayMs: fc.integer({ min: 1, max: 5_000 }),
    baseExtra: fc.integer({ min: 0, max: 60_000 }),
    maxExtra: fc.integer({ min: 0, max: 24 * 3_600_000 }),
    maxTotalMs: fc.integer({ min: 5_000, max: 72 * 3_600_000 }),
  })
  .map(({ minDelayMs, baseExtra, maxExtra, maxTotalMs }) => ({
    minDelayMs,
    baseDelayMs: minDelayMs + baseExtra,
    maxDelayMs: minDelayMs + baseExtra + maxExtra,
    maxTotalMs,
  }));

/** Policies whose schedules stay short (at most ~2,000 retries) even when every draw is 0. */
const shortPolicies = policies.map((policy) => ({
  ...policy,
  maxTotalMs: Math.max(policy.minDelayMs, Math.min(policy.maxTotalMs, policy.minDelayMs * 2_000)),
}));

const randoms = fc.array(fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), {
  minLength: 1,
  maxLength: 64,
});

describe('webhook retry backoff', () => {
  it('the default is valid and gives up after 72 hours', () => {
    expect(backoffProblem(defaultWebhookBackoff)).toBeUndefined();
    expect(defaultWebhookBackoff.maxTotalMs).toBe(72 * 3_600_000);
  });

  it('each delay lies between the floor and the doubling, capped ceiling, or is the time left', () => {
    fc.assert(
      fc.property(
        policies,
        fc.integer({ min: 1, max: 200 }),
        fc.nat(),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (policy, attempt, elapsedSeed, r) => {
          const elapsed = elapsedSeed % (policy.maxTotalMs + 1_000);
          const delay = nextRetryDelayMs(policy, attempt, elapsed, () => r);
          const left = policy.maxTotalMs - elapsed;
          if (left <= 0) {
            expect(delay).toBeUndefined();
            return;
          }
          const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
          expect(delayCeilingMs(policy, attempt)).toBe(ceiling);
          expect(delay).toBeDefined();
          expect(delay).toBeLessThanOrEqual(Math.min(ceiling, left));
          expect(delay).toBeGreaterThanOrEqual(Math.min(policy.minDelayMs, left));
          expect(Number.isInteger(delay)).toBe(true);
        },
      ),
    );
  });

  it('the jitter spreads delays over the whole range: the lowest draw gives the floor, the highest the ceiling', () => {
    fc.assert(
      fc.property(policies, fc.integer({ min: 1, max: 40 }), (policy, attempt) => {
        const ceiling = delayCeilingMs(policy, attempt);
        fc.pre(ceiling <= policy.maxTotalMs);
        expect(nextRetryDelayMs(policy, attempt, 0, () => 0)).toBe(policy.minDelayMs);
        expect(nextRetryDelayMs(policy, attempt, 0, () => 0.999_999_999)).toBeGreaterThanOrEqual(ceiling - 1);
      }),
    );
  });

  it('every retry of a delivery that never succeeds is made within the bound, until no time is left for another', () => {
    fc.assert(
      fc.property(shortPolicies, randoms, fc.integer({ min: 0, max: 10_000 }), (policy, numbers, seed) => {
        const attemptMs = seed % policy.maxTotalMs;
        const times = retrySchedule(policy, sourceOf(numbers), attemptMs);
        expect(times.length).toBeGreaterThan(0);
        for (const [index, time] of times.entries()) {
          expect(time).toBeLessThanOrEqual(policy.maxTotalMs);
          if (index > 0) expect(time).toBeGreaterThan(times[index - 1] as number);
        }
        // The last retry ends at or past the bound: there was no room for one more.
        expect((times.at(-1) as number) + attemptMs).toBeGreaterThanOrEqual(policy.maxTotalMs);
        // And when the time left was shorter than the drawn delay, the last retry is made at the bound itself.
        if (attemptMs === 0) expect(times.at(-1)).toBe(policy.maxTotalMs);
      }),
      { numRuns: 200 },
    );
  });

  it('the same random numbers give the same schedule', () => {
    fc.assert(
      fc.property(shortPolicies, randoms, (policy, numbers) => {
        expect(retrySchedule(policy, sourceOf(numbers), 100)).toEqual(retrySchedule(policy, sourceOf(numbers), 100));
      }),
      { numRuns: 100 },
    );
  });

  it('the default schedule makes a bounded number of attempts in its 72 hours, whatever the draws', () => {
    for (const r of [0, 0.5, 0.999_999]) {
      const times = retrySchedule(defaultWebhookBackoff, () => r, 50);
      expect(times.at(-1)).toBeLessThanOrEqual(72 * 3_600_000);
      expect((times.at(-1) as number) + 50).toBeGreaterThanOrEqual(72 * 3_600_000);
      expect(times.length).toBeLessThan(72 * 3_600 + 1);
    }
    // With the highest draws, the delays double from 5 seconds to the one-hour cap.
    const top = retrySchedule(defaultWebhookBackoff, () => 0.999_999_999);
    const delays = top.map((time, index) => time - (index === 0 ? 0 : (top[index - 1] as number)));
    expect(delays.slice(0, 4).map((delay) => Math.round(delay / 1000))).toEqual([5, 10, 20, 40]);
    expect(Math.max(...delays)).toBeLessThanOrEqual(3_600_000);
  });

  it.each([
    [{ ...defaultWebhookBackoff, baseDelayMs: -1 }, /baseDelayMs/],
    [{ ...defaultWebhookBackoff, minDelayMs: 10_000, baseDelayMs: 5_000 }, /minDelayMs must be at most/],
    [{ ...defaultWebhookBackoff, maxDelayMs: 1_000 }, /baseDelayMs must be at most maxDelayMs/],
    [{ ...defaultWebhookBackoff, maxTotalMs: 1.5 }, /maxTotalMs/],
  ])('a policy that cannot work is refused (%#)', (policy, words) => {
    expect(backoffProblem(policy)).toMatch(words);
  });
});
