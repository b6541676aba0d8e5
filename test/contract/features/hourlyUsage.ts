import { describe, expect, it } from 'vitest';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { accountId, answer, commitOne, policy, queueOf, submit } from '../fixtures.js';

const hourMs = 3_600_000;

/** Starts and completes (or fails) a request at `at`. */
const finish = async (store: StoreShape, reqId: string, at: number, outcome: 'completed' | 'failed' = 'completed') => {
  await commitOne(store, { type: 'StartAttempt', reqId, now: at, owner: 'A', leaseMs: 10_000 });
  const queue = queueOf(store);
  const held = { reqId, attempt: 1, owner: 'A' };
  expect(
    outcome === 'completed'
      ? await queue.recordSuccess(held, answer('ok'), at + 1)
      : await queue.recordFailure(held, 'upstream 400', { ...policy, maxAttempts: 1 }, at + 1),
  ).toBe('recorded');
};

const row = (hour: number, account: number, model: string, requests: number) => ({
  hour,
  accountId: accountId(account),
  model,
  inputTokens: 3 * requests,
  outputTokens: 5 * requests,
  requests,
});

/**
 * The hourly usage view (contract 21's usage API): per UTC hour of completion, account and model, the tokens and the
 * number of completed requests, written with the completion; read by range in key order, a page at a time.
 */
export const hourlyUsageFeatures = ({ open }: Contract) =>
  describe('the hourly usage view', () => {
    it('counts each completed request once in the hour it completed, under its account and model, and no failed or expired request', async () => {
      const store = await open();
      const from = 100 * hourMs;
      const ttlMs = 10 * hourMs;
      await store.commit({
        commands: [
          submit('req_1', { now: from, ttlMs }),
          submit('req_2', { now: from, ttlMs, model: 'other' }),
          submit('req_3', { now: from, ttlMs, account: 2 }),
          submit('req_4', { now: from, ttlMs }),
          submit('req_5', { now: from, ttlMs }),
          submit('req_6', { now: from, ttlMs }),
        ],
      });
      await finish(store, 'req_1', from + 10);
      await finish(store, 'req_2', from + 20);
      await finish(store, 'req_3', from + hourMs + 5);
      await finish(store, 'req_4', from + hourMs - 2);
      await finish(store, 'req_5', from + 30, 'failed');
      // Completed, then expired: counted once.
      await commitOne(store, { type: 'Expire', reqId: 'req_4', now: from + ttlMs });
      await commitOne(store, { type: 'Expire', reqId: 'req_6', now: from + ttlMs });
      expect(await store.reads.usageRows({ fromHour: 0, toHour: 1000 * hourMs, limit: 100 })).toEqual([
        row(from, 1, 'echo', 2),
        row(from, 1, 'other', 1),
        row(from + hourMs, 2, 'echo', 1),
      ]);
    });

    it('reads rows of hours in [fromHour, toHour) in key order, after a row when asked and at most limit of them', async () => {
      const store = await open();
      const from = 200 * hourMs;
      const ttlMs = 10 * hourMs;
      const plan = [
        ['req_a', 1, 'echo', from],
        ['req_b', 2, 'echo', from + 1],
        ['req_c', 1, 'other', from + 2],
        ['req_d', 1, 'echo', from + hourMs],
        ['req_e', 1, 'echo', from + 2 * hourMs],
      ] as const;
      await store.commit({
        commands: plan.map(([reqId, account, model]) => submit(reqId, { now: from - 10, ttlMs, account, model })),
      });
      for (const [reqId, , , at] of plan) await finish(store, reqId, at);
      const all = await store.reads.usageRows({ fromHour: from, toHour: from + 3 * hourMs, limit: 10 });
      expect(all.map((r) => [r.hour, r.accountId, r.model])).toEqual([
        [from, accountId(1), 'echo'],
        [from, accountId(1), 'other'],
        [from, accountId(2), 'echo'],
        [from + hourMs, accountId(1), 'echo'],
        [from + 2 * hourMs, accountId(1), 'echo'],
      ]);
      expect(await store.reads.usageRows({ fromHour: from, toHour: from + 2 * hourMs, limit: 2 })).toEqual(
        all.slice(0, 2),
      );
      expect(
        await store.reads.usageRows({ fromHour: from, toHour: from + 2 * hourMs, after: all[1], limit: 10 }),
      ).toEqual(all.slice(2, 4));
      expect(await store.reads.usageRows({ fromHour: from + hourMs, toHour: from + 3 * hourMs, limit: 10 })).toEqual(
        all.slice(3),
      );
      expect(await store.reads.usageRows({ fromHour: from, toHour: from, limit: 10 })).toEqual([]);
      expect(await store.reads.usageRows({ fromHour: from, toHour: from + hourMs, limit: 0 })).toEqual([]);
    });

    it('adds the requests of one write that complete in the same hour, account and model into one row', async () => {
      const store = await open();
      const at = 300 * hourMs;
      await store.commit({ commands: [submit('req_x', { now: at }), submit('req_y', { now: at })] });
      for (const reqId of ['req_x', 'req_y'])
        await commitOne(store, { type: 'StartAttempt', reqId, now: at, owner: 'A', leaseMs: 10_000 });
      await store.commit({
        commands: ['req_x', 'req_y'].map((reqId) => ({
          type: 'RecordSuccess' as const,
          reqId,
          attempt: 1,
          owner: 'A',
          responseChars: 2,
          response: 'ok',
          inputTokens: 3,
          outputTokens: 5,
          now: at + 5,
        })),
      });
      expect(await store.reads.usageRows({ fromHour: at, toHour: at + hourMs, limit: 10 })).toEqual([
        row(at, 1, 'echo', 2),
      ]);
    });
  });
