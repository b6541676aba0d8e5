import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createTokenBudget } from '../../src/app/tokenBudget.js';
import { defaultPlans } from '../../src/domain/plans.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { accountId, commitOne, createAccount, queueOf, submit } from '../contract/fixtures.js';
import { tempDataDir } from '../support/testApp.js';
import { openStoreOf } from '../support/testStore.js';

/**
 * Contract 21's bound, over random interleavings of submits and endings: a day budget is overspent by no more than
 * the tokens of the requests in flight when it was reached. A submit is two steps that other steps may come between:
 * its check (one read of the account's token buckets) and its write; a request is in flight from its check on.
 */

const limit = 60;
const plans = { ...defaultPlans, free: { ...defaultPlans.free, tokensPerDay: limit } };
const principal = { accountId: accountId(1), plan: 'free' as const };

type Step =
  | { readonly kind: 'check' }
  | { readonly kind: 'write'; readonly pick: number }
  | { readonly kind: 'end'; readonly pick: number; readonly input: number; readonly output: number }
  | { readonly kind: 'tick'; readonly ms: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'check' as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant('write' as const), pick: fc.nat(50) }), weight: 3 },
  {
    arbitrary: fc.record({
      kind: fc.constant('end' as const),
      pick: fc.nat(50),
      input: fc.nat(20),
      output: fc.nat(20),
    }),
    weight: 3,
  },
  { arbitrary: fc.record({ kind: fc.constant('tick' as const), ms: fc.nat(5_000) }), weight: 1 },
);

const run = async (store: StoreShape, steps: readonly Step[]) => {
  let now = Date.UTC(2026, 4, 5, 10);
  const budget = createTokenBudget({ reads: store.reads, plans: () => plans, now: () => now });
  await commitOne(store, createAccount(1));
  const queue = queueOf(store);
  let ids = 0;
  const checked: string[] = [];
  const running: string[] = [];
  let used = 0;
  /** Requests not ended when the budget was reached (the one that reached it included), and their tokens. */
  let inFlightAtReach: Set<string> | undefined;
  const tokensOf = new Map<string, number>();
  const admittedAfterReach: string[] = [];

  const write = async (reqId: string) => {
    await commitOne(store, submit(reqId, { now, ttlMs: 86_400_000 }));
    await commitOne(store, { type: 'StartAttempt', reqId, now, owner: 'A', leaseMs: 3_600_000 });
    running.push(reqId);
  };
  const end = async (reqId: string, input: number, output: number) => {
    if (used + input + output >= limit && used < limit) inFlightAtReach = new Set([reqId, ...checked, ...running]);
    const recorded = await queue.recordSuccess(
      { reqId, attempt: 1, owner: 'A' },
      { text: 'ok', inputTokens: input, outputTokens: output },
      now,
    );
    expect(recorded).toBe('recorded');
    used += input + output;
    tokensOf.set(reqId, input + output);
  };

  for (const s of steps) {
    if (s.kind === 'check') {
      const refusal = await budget.check(principal);
      if (refusal === undefined) {
        const reqId = `req_${++ids}`;
        checked.push(reqId);
        if (inFlightAtReach !== undefined) admittedAfterReach.push(reqId);
      } else expect(used).toBeGreaterThanOrEqual(limit);
    } else if (s.kind === 'write' && checked.length > 0) {
      await write(checked.splice(s.pick % checked.length, 1)[0] as string);
    } else if (s.kind === 'end' && running.length > 0) {
      await end(running.splice(s.pick % running.length, 1)[0] as string, s.input, s.output);
    } else if (s.kind === 'tick') now += s.ms;
  }
  // Work accepted finishes: every request checked is written and ends.
  for (const reqId of checked.splice(0)) await write(reqId);
  while (running.length > 0) await end(running.shift() as string, 10, 10);

  // No check admits once the budget is reached (the same day throughout), and the store counted every token.
  expect(admittedAfterReach).toEqual([]);
  const day = (await store.reads.tokenUse(accountId(1))).find((bucket) => bucket.kind === 'day');
  expect(day?.tokens ?? 0).toBe(used);
  if (inFlightAtReach === undefined) expect(used).toBeLessThan(limit);
  else {
    const inFlightTokens = [...inFlightAtReach].reduce((sum, reqId) => sum + (tokensOf.get(reqId) ?? 0), 0);
    expect(used - limit).toBeLessThanOrEqual(inFlightTokens);
  }
};

describe('Token budgets over random interleavings of submits and endings', () => {
  it('never overspend a day budget by more than the tokens of the requests in flight when it was reached (memory store)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 40, maxLength: 150 }), async (steps) => {
        const store = openStoreOf('memory');
        try {
          await run(store, steps);
        } finally {
          await store.close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('never overspend a day budget by more than the tokens of the requests in flight when it was reached (LMDB store)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 40, maxLength: 100 }), async (steps) => {
        const dataDir = tempDataDir('airs-token-property');
        const store = openStoreOf('lmdb', dataDir);
        try {
          await run(store, steps);
        } finally {
          await store.close();
          rmSync(dataDir, { recursive: true, force: true });
        }
      }),
      { numRuns: 15 },
    );
  });
});
