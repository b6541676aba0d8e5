import { describe, expect, it } from 'vitest';
import { type Decision, decideGcra } from '../../../src/domain/rateLimit/gcra.js';
import type { Spend } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { oneToN } from '../fixtures.js';

const limit = 5;
const windowMs = 60_000;
const spendOf = (accountId: string, now: number, budget = 'submits'): Spend => ({
  accountId,
  budget,
  limit,
  windowMs,
  now,
});

/** The reference: one GCRA that sees every spend in the order given. */
const reference = (spends: readonly Spend[]): Decision[] => {
  const tats = new Map<string, number>();
  return spends.map((spend) => {
    const key = `${spend.accountId}\u0000${spend.budget}`;
    const decision = decideGcra({ limit: spend.limit, windowMs: spend.windowMs }, tats.get(key), spend.now);
    tats.set(key, decision.tat);
    return decision;
  });
};

/** What a caller is told (the TAT is the store's business). */
const told = ({ allowed, remaining, resetMs, retryAfterMs }: Decision) => ({
  allowed,
  remaining,
  resetMs,
  retryAfterMs,
});

/** Spends sent at once are decided in some order: the answers are the reference's for spends at one time, as a set. */
const byAnswer = (decisions: readonly Decision[]) =>
  decisions.map(told).sort((x, y) => y.remaining - x.remaining || x.retryAfterMs - y.retryAfterMs);

/**
 * Rate limits are spent inside the store's writes (GCRA against the state the store holds at that moment), so that
 * an account gets its budget once, however many servers it calls.
 */
export const limitFeatures = ({ open, itWith, factory }: Contract) =>
  describe('exact limits', () => {
    it('grants exactly the burst to spends for one account sent at once, answering as a reference GCRA does', async () => {
      const store = await open();
      const spends = oneToN(12).map(() => spendOf('acct_1', 10_000));
      const decisions = (await Promise.all(spends.map((spend) => store.spend([spend])))).flat();
      expect(decisions.filter((decision) => decision.allowed)).toHaveLength(limit);
      expect(byAnswer(decisions)).toEqual(byAnswer(reference(spends)));
    });

    it('keeps a budget whose interval is not a whole number of milliseconds exactly (7 a minute, at odd times)', async () => {
      const store = await open();
      const spends = [10_000.5, 10_001, 18_572.3, 18_573, 27_143, 27_144.9, 40_000].flatMap((now) =>
        oneToN(3).map(() => ({ ...spendOf('acct_odd', now), limit: 7 })),
      );
      const decisions: Decision[] = [];
      for (const spend of spends) decisions.push(...(await store.spend([spend])));
      expect(decisions.map(told)).toEqual(reference(spends).map(told));
      expect(await store.reads.limiterState('acct_odd', 'submits')).toBe(reference(spends).at(-1)?.tat);
    });

    it('decides the spends of one call in order, each against what the ones before it left, and keeps accounts and budgets apart', async () => {
      const store = await open();
      const spends = [
        ...oneToN(7).map(() => spendOf('acct_1', 10_000)),
        spendOf('acct_2', 10_000),
        spendOf('acct_1', 10_000, 'polls'),
        spendOf('acct_1', 22_000),
        spendOf('acct_1', 22_000),
      ];
      expect((await store.spend(spends)).map(told)).toEqual(reference(spends).map(told));
    });

    it('answers spends over time as the reference GCRA does: refusals say when to retry, and the budget refills', async () => {
      const store = await open();
      const spends = [0, 0, 0, 0, 0, 0, 1_000, 11_999, 12_000, 12_000, 30_000, 100_000, 100_000].map((now) =>
        spendOf('acct_1', 50_000 + now),
      );
      const decisions: Decision[] = [];
      for (const spend of spends) decisions.push(...(await store.spend([spend])));
      expect(decisions.map(told)).toEqual(reference(spends).map(told));
      expect(decisions.map((decision) => decision.allowed)).toEqual([
        ...[true, true, true, true, true, false, false, false],
        ...[true, false, true, true, true],
      ]);
    });

    itWith(
      factory.another,
      'grants no more through two handles spending at once than one handle would',
      async (another) => {
        const first = await open();
        const second = await another(first);
        const spends = oneToN(20).map(() => spendOf('acct_1', 10_000));
        const decisions = (
          await Promise.all(spends.map((spend, i) => (i % 2 === 0 ? first : second).spend([spend])))
        ).flat();
        expect(decisions.filter((decision) => decision.allowed)).toHaveLength(limit);
        expect(byAnswer(decisions)).toEqual(byAnswer(reference(spends)));
        // Later spends, through either handle in turn, go on from the state both left.
        const later = [12_000, 12_000, 24_000, 24_000, 24_000].map((now) => spendOf('acct_1', now));
        const answers: Decision[] = [];
        for (const [i, spend] of later.entries())
          answers.push(...(await (i % 2 === 0 ? second : first).spend([spend])));
        expect(answers.map(told)).toEqual(
          reference([...spends, ...later])
            .slice(spends.length)
            .map(told),
        );
      },
    );

    itWith(
      factory.anotherProcess,
      'grants no more through this process and another spending at once than one process would',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const spends = oneToN(20).map(() => spendOf('acct_1', 10_000));
        const decisions = (
          await Promise.all(spends.map((spend, i) => (i % 2 === 0 ? store : other).spend([spend])))
        ).flat();
        expect(decisions.filter((decision) => decision.allowed)).toHaveLength(limit);
        expect(byAnswer(decisions)).toEqual(byAnswer(reference(spends)));
        // The other process's spends are the state this one reads.
        expect(await store.reads.limiterState('acct_1', 'submits')).toBe(reference(spends).at(-1)?.tat);
        // Long calls of both at the same moment: their spends overlap in time, yet each is decided against all before.
        const burst = oneToN(400).map(() => ({ ...spendOf('acct_2', 10_000, 'burst'), limit: 300 }));
        const [here, there] = await Promise.all([other.spend(burst), store.spend(burst)]);
        expect([...here, ...there].filter((decision) => decision.allowed)).toHaveLength(300);
      },
    );
  });
