import { describe, expect, it } from 'vitest';
import type { TokenBucket } from '../../../src/domain/tokens/tokenUse.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { accountId, answer, commitOne, createAccount, policy, queueOf, submit } from '../fixtures.js';

/** The buckets in one order, whatever order a store reads them in. */
const sorted = (buckets: readonly TokenBucket[]) =>
  [...buckets].sort((a, b) => a.kind.localeCompare(b.kind) || a.start - b.start);

/** Starts and completes a request at `at` (the fixtures' answer: 3 input and 5 output tokens). */
const complete = async (store: StoreShape, reqId: string, at: number, owner = 'A') => {
  await commitOne(store, { type: 'StartAttempt', reqId, now: at, owner, leaseMs: 10_000 });
  expect(await queueOf(store).recordSuccess({ reqId, attempt: 1, owner }, answer('ok'), at)).toBe('recorded');
};

// The last minute of January 2026 (UTC): the next completions fall in a new second, day and month.
const from = Date.UTC(2026, 0, 31, 23, 59, 0);
const ttlMs = 10 * 86_400_000;

/**
 * The token buckets (domain/tokens/tokenUse.ts) the token limits read: written in the same write as the request's
 * `RequestCompleted`, per account, and pruned as they pass, on every store.
 */
export const tokenUseFeatures = ({ open, pair }: Contract) =>
  describe('token buckets of completed requests', () => {
    it("counts a completed request's input and output tokens in its account's second, day and month, and prunes the buckets no submit reads any more", async () => {
      const store = await open();
      await store.commit({
        commands: [
          createAccount(1),
          createAccount(2),
          submit('req_1', { now: from - 1_000, ttlMs }),
          submit('req_2', { now: from - 1_000, ttlMs }),
          submit('req_3', { now: from - 1_000, ttlMs }),
          submit('req_4', { now: from - 1_000, ttlMs, account: 2 }),
        ],
      });
      expect(await store.reads.tokenUse(accountId(1))).toEqual([]);
      await complete(store, 'req_1', from);
      await complete(store, 'req_2', from + 30_000);
      await complete(store, 'req_4', from + 30_000);
      const january = Date.UTC(2026, 0, 1);
      const lastDay = Date.UTC(2026, 0, 31);
      expect(sorted(await store.reads.tokenUse(accountId(1)))).toEqual([
        { kind: 'day', start: lastDay, tokens: 16 },
        { kind: 'month', start: january, tokens: 16 },
        { kind: 'second', start: from, tokens: 8 },
        { kind: 'second', start: from + 30_000, tokens: 8 },
      ]);
      expect(sorted(await store.reads.tokenUse(accountId(2)))).toEqual([
        { kind: 'day', start: lastDay, tokens: 8 },
        { kind: 'month', start: january, tokens: 8 },
        { kind: 'second', start: from + 30_000, tokens: 8 },
      ]);
      // 61 s later it is February: the first second left the minute, and January's day and month are over.
      await complete(store, 'req_3', from + 61_500);
      const february = Date.UTC(2026, 1, 1);
      expect(sorted(await store.reads.tokenUse(accountId(1)))).toEqual([
        { kind: 'day', start: february, tokens: 8 },
        { kind: 'month', start: february, tokens: 8 },
        { kind: 'second', start: from + 30_000, tokens: 8 },
        { kind: 'second', start: from + 61_000, tokens: 8 },
      ]);
    });

    it('counts nothing for a request that fails, and every token of requests completed through two handles at once', async () => {
      const [one, two] = await pair();
      const reqIds = Array.from({ length: 10 }, (_, i) => `req_${i + 1}`);
      await one.commit({ commands: [createAccount(1), ...reqIds.map((reqId) => submit(reqId, { now: from, ttlMs }))] });
      await commitOne(one, { type: 'StartAttempt', reqId: 'req_10', now: from, owner: 'A', leaseMs: 10_000 });
      expect(
        await queueOf(one).recordFailure(
          { reqId: 'req_10', attempt: 1, owner: 'A' },
          'upstream 400',
          { ...policy, maxAttempts: 1 },
          from,
        ),
      ).toBe('recorded');
      await Promise.all(
        reqIds
          .slice(0, 9)
          .map((reqId, i) => complete(i % 2 === 0 ? one : two, reqId, from + 100, i % 2 === 0 ? 'A' : 'B')),
      );
      const buckets = sorted(await two.reads.tokenUse(accountId(1)));
      expect(buckets.map(({ kind, tokens }) => [kind, tokens])).toEqual([
        ['day', 72],
        ['month', 72],
        ['second', 72],
      ]);
    });
  });
