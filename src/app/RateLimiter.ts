import { Context, Effect, Layer, Option } from 'effect';
import { RateLimited } from '../domain/errors.js';
import type { PlanName } from '../domain/plans.js';
import { type Budget, decideGcra, peekGcra } from '../domain/rateLimit/gcra.js';
import { AppClock } from '../ports/Clock.js';
import { AppConfig } from './AppConfig.js';
import type { Principal } from './Auth.js';
import { LimiterStates } from './LimiterStates.js';
import { Metrics } from './Metrics.js';

export type BudgetName = 'submits' | 'polls';

/** What the IETF RateLimit headers say after a call: the policy and what is left of it. */
export type RateLimitStatus = {
  readonly budget: BudgetName;
  readonly limit: number;
  readonly windowSeconds: number;
  readonly remaining: number;
  readonly resetSeconds: number;
};

/** A call's spending: the status for the headers, and the refusal when the budget was spent. */
export type Spent = { readonly status: RateLimitStatus; readonly refusal?: RateLimited };

export interface RateLimiterShape {
  /** Spends one call of `budget` for the principal's account, or refuses it. Synchronous and without Effect: it
   * runs on every API call (see docs/decisions.md). */
  take(principal: Principal, budget: BudgetName): Spent;
  /** What is left of an account's budget right now, spending nothing (the dashboard shows it). */
  peek(accountId: string, plan: PlanName, budget: BudgetName): RateLimitStatus;
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()('airs/RateLimiter') {}

const windowMs = 60_000;
const pruneEvery = 10_000;

/**
 * One GCRA state per account and budget, in memory: O(1) per active account, no timers. Entries whose budget is
 * whole again carry no information and are dropped from time to time. Every change is saved with the committer's
 * next batch, so a restart does not hand out a fresh burst: a submit's state is in the same commit as its
 * `RequestQueued` (or an earlier one); what a crash can over-grant is bounded by the calls granted in the last
 * `limiterFlushMs` (see docs/decisions.md). A state missing from memory is read back from the store once.
 */
export const RateLimiterLayer = Layer.effect(
  RateLimiter,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const clock = yield* AppClock;
    const saved = yield* LimiterStates;
    const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics));
    const tats = new Map<string, number>();
    const stateOf = (key: string, accountId: string, budget: BudgetName) => {
      const known = tats.get(key);
      return known !== undefined ? known : saved.load(accountId, budget);
    };
    let calls = 0;
    const prune = (now: number) => {
      for (const [key, tat] of tats) if (tat <= now) tats.delete(key);
    };
    const peek: RateLimiterShape['peek'] = (accountId, planName, budget) => {
      const plan = config.plans[planName];
      const limit = budget === 'submits' ? plan.submitsPerMinute : plan.pollsPerMinute;
      const left = peekGcra(
        { limit, windowMs },
        stateOf(`${accountId}\u0000${budget}`, accountId, budget),
        clock.now(),
      );
      return {
        budget,
        limit,
        windowSeconds: windowMs / 1000,
        remaining: left.remaining,
        resetSeconds: Math.ceil(left.resetMs / 1000),
      };
    };
    const take: RateLimiterShape['take'] = (principal, budget) => {
      const now = clock.now();
      if (++calls % pruneEvery === 0) prune(now);
      const plan = config.plans[principal.plan];
      const limit = budget === 'submits' ? plan.submitsPerMinute : plan.pollsPerMinute;
      const spec: Budget = { limit, windowMs };
      const key = `${principal.accountId}\u0000${budget}`;
      const previous = stateOf(key, principal.accountId, budget);
      const decision = decideGcra(spec, previous, now);
      tats.set(key, decision.tat);
      if (decision.tat !== previous) saved.save({ accountId: principal.accountId, budget, tat: decision.tat });
      const status: RateLimitStatus = {
        budget,
        limit,
        windowSeconds: windowMs / 1000,
        remaining: decision.remaining,
        resetSeconds: Math.ceil(decision.resetMs / 1000),
      };
      if (decision.allowed) return { status };
      metrics?.rateLimited(principal.plan, budget);
      const retryAfterSeconds = Math.max(1, Math.ceil(decision.retryAfterMs / 1000));
      const refusal = new RateLimited({
        message: `the ${principal.plan} plan allows ${limit} ${budget} per minute for this account; retry after ${retryAfterSeconds} s`,
        retryAfterSeconds,
        budget,
      });
      return { status, refusal };
    };
    return RateLimiter.of({ take, peek });
  }),
);
