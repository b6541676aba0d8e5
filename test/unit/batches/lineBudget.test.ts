import { describe, expect, it } from 'vitest';
import { createLineBudget } from '../../../src/app/batches/lineBudget.js';

/** Whether the promise has settled by the next turn of the event loop. */
const settled = async (promise: Promise<unknown>) => {
  let done = false;
  void promise.then(() => {
    done = true;
  });
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe("a process's budget of batch lines handed to the committer", () => {
  it('gives an account at most its share of the lines and bytes, and lets its next write in once one is given back', async () => {
    const budget = createLineBudget({ maxLines: 100, maxBytes: 1_000, accountShare: 0.5 });
    expect(budget.perAccount).toEqual({ lines: 50, bytes: 500 });
    const first = await budget.take('acct_a', 30, 100);
    const second = budget.take('acct_a', 30, 100);
    expect(await settled(second)).toBe(false);
    // Bytes count as lines do: another write of the account within its lines but beyond its bytes waits too.
    const heavy = budget.take('acct_a', 1, 450);
    expect(await settled(heavy)).toBe(false);
    expect(budget.held()).toEqual({ lines: 30, bytes: 100 });
    first();
    expect(await settled(second)).toBe(true);
    expect(budget.held()).toEqual({ lines: 30, bytes: 100 });
    (await second)();
    (await heavy)();
    expect(budget.held()).toEqual({ lines: 0, bytes: 0 });
  });

  it("never holds an account's write back behind another account's that does not fit, and bounds all accounts together", async () => {
    const budget = createLineBudget({ maxLines: 100, maxBytes: 10_000, accountShare: 0.5 });
    const a = await budget.take('acct_a', 50, 10);
    const aMore = budget.take('acct_a', 10, 10);
    const b = budget.take('acct_b', 40, 10);
    expect(await settled(aMore)).toBe(false);
    expect(await settled(b)).toBe(true);
    // The process's bound: 90 held, a third account's 20 wait (its own share would take them).
    const c = budget.take('acct_c', 20, 10);
    expect(await settled(c)).toBe(false);
    (await b)();
    expect(await settled(c)).toBe(true);
    a();
    expect(await settled(aMore)).toBe(true);
    expect(budget.held()).toEqual({ lines: 30, bytes: 20 });
  });

  it('lets one write in whatever its size while nothing else is held, and gives back only once', async () => {
    const budget = createLineBudget({ maxLines: 10, maxBytes: 100, accountShare: 0.5 });
    const huge = await budget.take('acct_a', 1, 5_000);
    expect(budget.held()).toEqual({ lines: 1, bytes: 5_000 });
    const next = budget.take('acct_b', 1, 1);
    expect(await settled(next)).toBe(false);
    huge();
    huge();
    expect(await settled(next)).toBe(true);
    expect(budget.held()).toEqual({ lines: 1, bytes: 1 });
  });
});
