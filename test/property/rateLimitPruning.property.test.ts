import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/app/Auth.js';
import { defaultCommitterLimits } from '../../src/app/Committer.js';
import type { BudgetName } from '../../src/app/RateLimiter.js';
import { defaultPlans, type PlanName } from '../../src/domain/plans.js';
import { decideGcra } from '../../src/domain/rateLimit/gcra.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/**
 * The limiter keeps one GCRA state per account and budget in memory, drops the states whose budget is whole again
 * (every 10,000 calls), and reads a dropped state back from LMDB when the account calls again. LMDB holds only what
 * rode on a batch: a state saved a moment ago may not be there yet. Dropping a state whose budget is not whole would
 * therefore hand out a fresh burst. The property runs the real limiter on the real store against a reference that
 * keeps every state forever, through random calls from several accounts, clock moves, prunes and flushes.
 */

/** Small budgets, so random sequences spend them. */
const plans = {
  ...defaultPlans,
  free: { ...defaultPlans.free, submitsPerMinute: 3, pollsPerMinute: 5 },
  starter: { ...defaultPlans.starter, submitsPerMinute: 7, pollsPerMinute: 2 },
  scale: { ...defaultPlans.scale, submitsPerMinute: 1, pollsPerMinute: 11 },
};
const accountPlans: readonly PlanName[] = ['free', 'starter', 'scale'];
const windowMs = 60_000;

/** The limiter prunes on every 10,000th call: this many calls from another account always include one prune. */
const callsPerPrune = 10_000;

type Step =
  | { readonly kind: 'take'; readonly account: number; readonly budget: BudgetName; readonly count: number }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'prune' }
  | { readonly kind: 'flush' };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('take' as const),
      account: fc.integer({ min: 0, max: accountPlans.length - 1 }),
      budget: fc.constantFrom<BudgetName>('submits', 'polls'),
      count: fc.integer({ min: 1, max: 6 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.oneof(fc.integer({ min: 0, max: 5_000 }), fc.integer({ min: 0, max: 2 * windowMs })),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'prune' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'flush' as const }) },
);

describe('Rate-limiter pruning', () => {
  let app: TestApp;
  let runs = 0;
  beforeAll(async () => {
    // Limiter states reach LMDB only with a batch (here: a flush step), never on a timer mid-run.
    app = await startTestApp({
      config: { plans },
      committerLimits: { ...defaultCommitterLimits, limiterFlushMs: 3_600_000 },
    });
  });
  afterAll(() => app?.stop());

  it('never grants an account more than a limiter that never prunes: every call gets the same answer, and no window holds more grants than the budget allows', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const run = ++runs;
        const clock = app.clock as ManualClock;
        const principals: Principal[] = accountPlans.map((plan, i) => ({
          accountId: `acct_run${run}_${i}`,
          keyId: `key_run${run}_${i}`,
          plan,
        }));
        const filler: Principal = { accountId: `acct_filler${run}`, keyId: 'key_filler', plan: 'enterprise' };
        const reference = new Map<string, number>();
        const grants = new Map<string, number[]>();
        for (const s of steps) {
          if (s.kind === 'advance') clock.advance(s.ms);
          else if (s.kind === 'flush') await app.committer.drain();
          else if (s.kind === 'prune') {
            for (let i = 0; i < callsPerPrune; i++) app.rateLimiter.take(filler, 'polls');
          } else {
            const principal = principals[s.account] as Principal;
            const plan = plans[principal.plan];
            const limit = s.budget === 'submits' ? plan.submitsPerMinute : plan.pollsPerMinute;
            const key = `${principal.accountId}/${s.budget}`;
            for (let i = 0; i < s.count; i++) {
              const now = clock.now();
              const expected = decideGcra({ limit, windowMs }, reference.get(key), now);
              reference.set(key, expected.tat);
              const { refusal, status } = app.rateLimiter.take(principal, s.budget);
              expect({ key, now, granted: refusal === undefined, remaining: status.remaining }).toEqual({
                key,
                now,
                granted: expected.allowed,
                remaining: expected.remaining,
              });
              if (refusal === undefined) grants.set(key, [...(grants.get(key) ?? []), now]);
            }
          }
        }
        // GCRA's bound, checked on what the pruning limiter granted: n grants within w ms need n <= limit + w / interval.
        for (const [key, times] of grants) {
          const [accountId, budget] = key.split('/') as [string, BudgetName];
          const plan = plans[(principals.find((p) => p.accountId === accountId) as Principal).plan];
          const limit = budget === 'submits' ? plan.submitsPerMinute : plan.pollsPerMinute;
          const interval = windowMs / limit;
          for (let i = 0; i < times.length; i++) {
            for (let j = i; j < times.length; j++) {
              const window = (times[j] as number) - (times[i] as number);
              expect(j - i + 1, `${key}: ${j - i + 1} grants in ${window} ms`).toBeLessThanOrEqual(
                limit + window / interval + 1e-9,
              );
            }
          }
        }
      }),
      { numRuns: 150 },
    );
  }, 30_000);
});
