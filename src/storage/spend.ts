import { type Decision, decideGcra } from '../domain/rateLimit/gcra.js';
import type { Spend } from '../ports/Store.js';

/**
 * Spends budgets against stored limiter states (GCRA), in order: each spend sees the state the ones before it left.
 * The caller runs it inside one write, so that no other writer spends in between. Each account and budget is read
 * once and written once per call, however many of the spends are its: under load a call holds hundreds of spends of
 * a few accounts, and a store read and write per spend cost more than the deciding.
 */
export const spendAll = (
  spends: readonly Spend[],
  state: {
    readonly get: (accountId: string, budget: string) => number | undefined;
    readonly put: (accountId: string, budget: string, tat: number) => void;
  },
): Decision[] => {
  type Entry = { readonly accountId: string; readonly budget: string; readonly stored?: number; tat?: number };
  const tats = new Map<string, Entry>();
  const decisions = spends.map((spend) => {
    const key = `${spend.accountId}\u0000${spend.budget}`;
    let entry = tats.get(key);
    if (entry === undefined) {
      const stored = state.get(spend.accountId, spend.budget);
      entry = { accountId: spend.accountId, budget: spend.budget, stored, tat: stored };
      tats.set(key, entry);
    }
    const decision = decideGcra({ limit: spend.limit, windowMs: spend.windowMs }, entry.tat, spend.now);
    entry.tat = decision.tat;
    return decision;
  });
  for (const { accountId, budget, stored, tat } of tats.values())
    if (tat !== undefined && tat !== stored) state.put(accountId, budget, tat);
  return decisions;
};
