import { Effect, Layer } from 'effect';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AppConfigLayer } from '../../src/app/AppConfig.js';
import type { Principal } from '../../src/app/Auth.js';
import { type BudgetName, RateLimiter, RateLimiterLayer, type RateLimitStatus } from '../../src/app/RateLimiter.js';
import { defaultConfig } from '../../src/config.js';
import { defaultPlans, type PlanName } from '../../src/domain/plans.js';
import { AppClock, ManualClock } from '../../src/ports/Clock.js';
import { Store } from '../../src/ports/Store.js';
import { openStoreOf } from '../support/testStore.js';

const limiterWith = (clock: ManualClock, submitsPerMinute: number) => {
  const config = defaultConfig({
    plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute, pollsPerMinute: submitsPerMinute } },
  });
  const layer = RateLimiterLayer.pipe(
    Layer.provide(
      Layer.mergeAll(
        AppConfigLayer(config),
        Layer.succeed(AppClock, clock),
        Layer.succeed(Store, openStoreOf('memory')),
      ),
    ),
  );
  return Effect.runSync(Effect.provide(RateLimiter, layer));
};

type Outcome = { at: number; granted: boolean; retryAfterSeconds?: number; status?: RateLimitStatus };

const take = async (
  limiter: ReturnType<typeof limiterWith>,
  principal: Principal,
  budget: BudgetName,
  at: number,
): Promise<Outcome> => {
  const { status, refusal } = await limiter.take(principal, budget);
  return refusal === undefined
    ? { at, granted: true, status }
    : { at, granted: false, retryAfterSeconds: refusal.retryAfterSeconds, status };
};

const arrivals = fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.integer({ min: 0, max: 2 })), {
  minLength: 1,
  maxLength: 300,
});

describe('Rate limits per account', () => {
  it('never grant more than the burst plus what refilled in any window, whichever keys of the account are used', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 120 }), arrivals, async (limit, steps) => {
        const clock = new ManualClock(0);
        const limiter = limiterWith(clock, limit);
        const grants: number[] = [];
        for (const [gap, key] of steps) {
          clock.advance(gap);
          const principal: Principal = { accountId: 'acct_one', keyId: `key_${key}`, plan: 'free' as PlanName };
          if ((await take(limiter, principal, 'submits', clock.now())).granted) grants.push(clock.now());
        }
        const interval = 60_000 / limit;
        // GCRA's bound: n grants within w ms need n <= limit + w / interval.
        for (let i = 0; i < grants.length; i++) {
          for (let j = i; j < grants.length; j++) {
            const window = (grants[j] as number) - (grants[i] as number);
            expect(j - i + 1).toBeLessThanOrEqual(limit + window / interval + 1e-9);
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('grant a refused caller again once its Retry-After has passed, if nothing else was spent meanwhile', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 1, max: 120 }), arrivals, async (limit, steps) => {
        const clock = new ManualClock(0);
        const limiter = limiterWith(clock, limit);
        const principal: Principal = { accountId: 'acct_one', keyId: 'key_0', plan: 'free' };
        for (const [gap] of steps) {
          clock.advance(gap);
          const outcome = await take(limiter, principal, 'submits', clock.now());
          if (!outcome.granted) {
            expect(outcome.retryAfterSeconds).toBeGreaterThanOrEqual(1);
            expect(Number.isInteger(outcome.retryAfterSeconds)).toBe(true);
            // Spending nothing else, the call is granted exactly once Retry-After has passed.
            clock.advance((outcome.retryAfterSeconds as number) * 1_000);
            expect((await take(limiter, principal, 'submits', clock.now())).granted).toBe(true);
          }
        }
      }),
      { numRuns: 150 },
    );
  });

  it('keep accounts and budgets apart: spending one account’s submits leaves its polls and other accounts whole', async () => {
    const clock = new ManualClock(0);
    const limiter = limiterWith(clock, 5);
    const a: Principal = { accountId: 'acct_a', keyId: 'k', plan: 'free' };
    const b: Principal = { accountId: 'acct_b', keyId: 'k', plan: 'free' };
    for (let i = 0; i < 5; i++) expect((await take(limiter, a, 'submits', 0)).granted).toBe(true);
    expect((await take(limiter, a, 'submits', 0)).granted).toBe(false);
    expect((await take(limiter, a, 'polls', 0)).status).toMatchObject({ budget: 'polls', remaining: 4 });
    expect((await take(limiter, b, 'submits', 0)).status).toMatchObject({ budget: 'submits', remaining: 4 });
  });
});
