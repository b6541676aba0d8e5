import { Context, Effect, Layer } from 'effect';
import { type LimiterEntry, Store } from '../ports/Store.js';
import { Committer } from './Committer.js';

/** Where the rate limiter keeps its state across restarts: read back once per account and budget, saved with the
 * committer's batches. */
export interface LimiterStatesShape {
  load(accountId: string, budget: string): number | undefined;
  save(entry: LimiterEntry): void;
}

export class LimiterStates extends Context.Service<LimiterStates, LimiterStatesShape>()('airs/LimiterStates') {}

export const LimiterStatesLayer = Layer.effect(
  LimiterStates,
  Effect.gen(function* () {
    const { reads } = yield* Store;
    const committer = yield* Committer;
    return LimiterStates.of({ load: reads.limiterState, save: committer.saveLimiterState });
  }),
);

/** Kept in a map only: for tests of the limiter's arithmetic, and to model a restart (a new limiter, same map). */
export const inMemoryLimiterStates = (saved = new Map<string, number>()): LimiterStatesShape => ({
  load: (accountId, budget) => saved.get(`${accountId}\u0000${budget}`),
  save: ({ accountId, budget, tat }) => void saved.set(`${accountId}\u0000${budget}`, tat),
});
