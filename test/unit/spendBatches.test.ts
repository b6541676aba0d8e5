import { describe, expect, it } from 'vitest';
import { spendBatches } from '../../src/app/spendBatches.js';
import { decideGcra } from '../../src/domain/rateLimit/gcra.js';
import type { Spend, StoreShape } from '../../src/ports/Store.js';
import { openStoreOf } from '../support/testStore.js';

const spendOf = (accountId: string, now: number): Spend => ({
  accountId,
  budget: 'polls',
  limit: 3,
  windowMs: 60_000,
  now,
});

/** The memory store, counting its writes of spends. */
const countingStore = () => {
  const store = openStoreOf('memory');
  const writes: number[] = [];
  const counted: Pick<StoreShape, 'spend'> = {
    spend: (spends) => {
      writes.push(spends.length);
      return store.spend(spends);
    },
  };
  return { counted, writes };
};

describe('Spends of many callers', () => {
  it('are decided in one write of the store when they come in one turn, in the order they came, as GCRA decides them one by one', async () => {
    const { counted, writes } = countingStore();
    const spend = spendBatches(counted);
    const spends = [1, 2, 3, 4, 5].map((i) => spendOf('acct_a', 1_000 + i));
    const decisions = await Promise.all(spends.map(spend));
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([5]);
    let tat: number | undefined;
    const reference = spends.map((each) => {
      const decision = decideGcra({ limit: each.limit, windowMs: each.windowMs }, tat, each.now);
      tat = decision.tat;
      return decision;
    });
    expect(decisions).toEqual(reference);
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true, false, false]);
  });

  it('answers a lone spend at the end of its turn, and spends of a later turn in a write of their own', async () => {
    const { counted, writes } = countingStore();
    const spend = spendBatches(counted);
    expect((await spend(spendOf('acct_b', 1_000))).allowed).toBe(true);
    await Promise.all([spend(spendOf('acct_b', 2_000)), spend(spendOf('acct_c', 2_000))]);
    await new Promise((resolve) => setImmediate(resolve));
    expect(writes).toEqual([1, 2]);
  });

  it('holds one write in flight at a time: spends that come meanwhile go together in the next write', async () => {
    const store = openStoreOf('memory');
    const writes: number[] = [];
    let open = () => {};
    const gate = new Promise<void>((resolve) => (open = resolve));
    const spend = spendBatches({
      spend: async (spends) => {
        writes.push(spends.length);
        if (writes.length === 1) await gate;
        return store.spend(spends);
      },
    });
    const first = spend(spendOf('acct_e', 1));
    await new Promise((resolve) => setImmediate(resolve));
    // Three more turns while the first write is in flight.
    const later: Promise<unknown>[] = [];
    for (let turn = 0; turn < 3; turn++) {
      later.push(spend(spendOf('acct_e', 2 + turn)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(writes).toEqual([1]);
    open();
    await Promise.all([first, ...later]);
    expect(writes).toEqual([1, 3]);
  });

  it('rejects the spends of a store that throws instead of rejecting, and keeps serving', async () => {
    const store = openStoreOf('memory');
    let fail = true;
    const spend = spendBatches({
      spend: (spends) => {
        if (fail) throw new Error('thrown, not rejected');
        return store.spend(spends);
      },
    });
    await expect(spend(spendOf('acct_f', 1))).rejects.toThrow('thrown, not rejected');
    fail = false;
    expect((await spend(spendOf('acct_f', 2))).allowed).toBe(true);
  });

  it('rejects every spend of a write that failed, and the next turn writes again', async () => {
    let fail = true;
    const store = openStoreOf('memory');
    const spend = spendBatches({
      spend: (spends) => (fail ? Promise.reject(new Error('disk gone')) : store.spend(spends)),
    });
    const failed = await Promise.allSettled([spend(spendOf('acct_d', 1)), spend(spendOf('acct_d', 2))]);
    expect(failed.map((each) => each.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect((await spend(spendOf('acct_d', 3))).allowed).toBe(true);
  });
});
