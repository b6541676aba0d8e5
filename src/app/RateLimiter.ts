import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { RateLimited } from '../domain/errors.js';
import type { PlanLimits } from '../domain/plans.js';
import { peekGcra } from '../domain/rateLimit/gcra.js';
import { AppClock } from '../ports/Clock.js';
import { Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { limitsOf, type Principal } from './Auth.js';
import { Metrics } from './Metrics.js';
import { spendBatches } from './spendBatches.js';

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
  /** Spends one call of `budget` for the principal's account, or refuses it: decided by the store, so exact across
   * every process and server of the installation. */
  take(principal: Principal, budget: BudgetName): Promise<Spent>;
  /** What is left of an account's budget right now, spending nothing (the dashboard shows it). */
  peek(accountId: string, limits: PlanLimits, budget: BudgetName): Promise<RateLimitStatus>;
}

export class RateLimiter extends Context.Service<RateLimiter, RateLimiterShape>()('airs/RateLimiter') {}

const windowMs = 60_000;

/**
 * GCRA per account and budget (domain/rateLimit/gcra.ts), its state kept by the store and each spend decided inside
 * one of its writes (`Store.spend`): two servers spending for one account at once cannot both take its last unit.
 * Nothing is kept in this process.
 */
export const RateLimiterLayer = Layer.effect(
  RateLimiter,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const clock = yield* AppClock;
    const store = yield* Store;
    const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics));
    const spend = spendBatches(store);
    const limitOf = (limits: PlanLimits, budget: BudgetName) =>
      budget === 'submits' ? limits.submitsPerMinute : limits.pollsPerMinute;
    const peek: RateLimiterShape['peek'] = async (accountId, limits, budget) => {
      const limit = limitOf(limits, budget);
      const left = peekGcra({ limit, windowMs }, await store.reads.limiterState(accountId, budget), clock.now());
      return {
        budget,
        limit,
        windowSeconds: windowMs / 1000,
        remaining: left.remaining,
        resetSeconds: Math.ceil(left.resetMs / 1000),
      };
    };
    const take: RateLimiterShape['take'] = async (principal, budget) => {
      const limit = limitOf(limitsOf(config.plans, principal), budget);
      const decision = await spend({ accountId: principal.accountId, budget, limit, windowMs, now: clock.now() });
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
