import { type Decision, decideGcra } from '../domain/rateLimit/gcra.js';
import type { Spend } from '../ports/Store.js';

/**
 * Spends budgets against stored limiter states (GCRA), in order: each spend sees the state the ones before it left.
 * The caller runs it inside one write, so that no other writer spends in between.
 */
export const spendAll = (
  spends: readonly Spend[],
  state: {
    readonly get: (accountId: string, budget: string) => number | undefined;
    readonly put: (accountId: string, budget: string, tat: number) => void;
  },
): Decision[] =>
  spends.map((spend) => {
    const before = state.get(spend.accountId, spend.budget);
    const decision = decideGcra({ limit: spend.limit, windowMs: spend.windowMs }, before, spend.now);
    if (decision.tat !== before) state.put(spend.accountId, spend.budget, decision.tat);
    return decision;
  });
