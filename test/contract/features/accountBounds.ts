import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Claimed, WorkQueueShape } from '../../../src/ports/WorkQueue.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  answer,
  ask,
  commitOne,
  createAccount,
  eventsOf,
  oneToN,
  policy,
  queueOf,
  statusOf,
  submit,
} from '../fixtures.js';

/** The free plan's bound in these tests (fixtures make every account on the free plan). */
const bounded = { maxProcessing: { free: 2 } };

/** Submits `count` requests of acct_<account>, ids `req_<account>_<n>` (in order of availability). */
const submitsOf = (account: number, count: number, model = 'echo', now = 1_000): Command[] =>
  oneToN(count).map((n) => submit(`req_${account}_${String(n).padStart(2, '0')}`, { account, model, now: now + n }));

const accountsOf = async (store: StoreShape, claimed: Claimed) =>
  Promise.all(claimed.started.map(async ({ reqId }) => (await store.reads.request(reqId))?.context.accountId));

const countOf = (accounts: readonly (string | undefined)[], account: number) =>
  accounts.filter((id) => id === accountId(account)).length;

/**
 * Contract 18: an account's requests being processed at once are bounded by its plan (`maxProcessing`), exactly, in
 * all processes, decided in the store's write when work is claimed (or a submit starts at once); and while one account
 * holds its share of a model's workers (`accountShare`), the next worker goes to another account's due work of that
 * model. Accounts are on the free plan (fixtures).
 */
export const accountBoundFeatures = ({ open, pair, itWith, factory }: Contract) =>
  describe("an account's bound of requests being processed, and its share of a model's workers", () => {
    it("starts no more of an account's requests than its plan's maxProcessing over claims of two owners, and takes other accounts' work instead", async () => {
      const [first, second] = await pair();
      await first.commit({ commands: [createAccount(1), createAccount(2), ...submitsOf(1, 6), ...submitsOf(2, 2)] });
      const a = await queueOf(first).claim(ask('A', 2_000, { max: 3, ...bounded }));
      expect(await accountsOf(first, a)).toEqual([accountId(1), accountId(2), accountId(1)]);
      const b = await queueOf(second).claim(ask('B', 2_000, { max: 10, ...bounded }));
      expect(await accountsOf(first, b)).toEqual([accountId(2)]);
      // Account 1 waits with four requests due while it holds its two: work is due, none of it may start.
      expect((await queueOf(second).claim(ask('B', 2_000, { max: 10, ...bounded }))).started).toEqual([]);
      // One of its requests ends: exactly one more of its own may start.
      const [held] = a.started;
      if (held === undefined) throw new Error('nothing started');
      expect(await queueOf(first).recordSuccess({ ...held, owner: 'A' }, answer('done'), 3_000)).toBe('recorded');
      const c = await queueOf(second).claim(ask('B', 3_000, { max: 10, ...bounded }));
      expect(await accountsOf(first, c)).toEqual([accountId(1)]);
    });

    it("frees a place under an account's bound on every way out of processing: a retry, a give-back, a cancel, an expiry", async () => {
      const [store] = await pair();
      const queue = queueOf(store);
      await store.commit({ commands: [createAccount(1), ...submitsOf(1, 6, 'echo', 1_000)] });
      const claimOf = async (now: number): Promise<Claimed> => queue.claim(ask('A', now, { max: 10, ...bounded }));
      const [one, two] = (await claimOf(2_000)).started;
      if (one === undefined || two === undefined) throw new Error('two requests should have started');
      expect((await claimOf(2_000)).started).toEqual([]);
      // A failed attempt with attempts left waits for its retry: its place is free.
      expect(await queue.recordFailure({ ...one, owner: 'A' }, 'upstream 500', policy, 2_100)).toBe('recorded');
      const [three] = (await claimOf(2_200)).started;
      if (three === undefined) throw new Error('a third request should have started');
      // Given back.
      await queue.release({ ...two, owner: 'A' }, 2_300);
      const [four] = (await claimOf(2_400)).started;
      if (four === undefined) throw new Error('a fourth request should have started');
      // Cancelled while processing.
      const cancelled = await commitOne(store, { type: 'Cancel', reqId: three.reqId, now: 2_500 });
      expect(eventsOf(cancelled).map((event) => event.type)).toEqual(['RequestCancelled']);
      expect((await claimOf(2_600)).started).toHaveLength(1);
      expect((await claimOf(2_600)).started).toEqual([]);
      // Expired (60 s after creation): every place is free, and nothing is left to start.
      const expired = await store.commit({
        commands: submitsOf(1, 6).map((command) => ({
          type: 'Expire',
          reqId: (command as { reqId: string }).reqId,
          now: 62_000,
        })),
      });
      expect(expired).toHaveLength(6);
      await commitOne(store, submit('req_late', { account: 1, now: 62_000 }));
      await commitOne(store, submit('req_later', { account: 1, now: 62_001 }));
      expect((await claimOf(62_100)).started.map((s) => s.reqId)).toEqual(['req_late', 'req_later']);
      expect(await statusOf(store, 'req_late')).toBe('processing');
    });

    it('starts a submit at once only while its account is below its maxProcessing', async () => {
      const [store] = await pair();
      await commitOne(store, createAccount(1));
      const startNow = { owner: 'A', leaseMs: 10_000 };
      const first = await commitOne(store, { ...submit('req_a'), startNow, maxProcessing: 1 } as Command);
      expect(eventsOf(first).map((event) => event.type)).toEqual(['RequestQueued', 'RequestProcessingStarted']);
      const second = await commitOne(store, {
        ...submit('req_b', { now: 1_001 }),
        startNow,
        maxProcessing: 1,
      } as Command);
      expect(eventsOf(second).map((event) => event.type)).toEqual(['RequestQueued']);
      expect(await statusOf(store, 'req_b')).toBe('waiting');
    });

    it("gives the next worker to another account's due request of the model while one account holds its share, and lets an account alone use every worker", async () => {
      const [store] = await pair();
      const queue: WorkQueueShape = queueOf(store);
      const share = { accountShare: 0.5, modelLimits: { echo: 4 } };
      await store.commit({ commands: [createAccount(1), createAccount(2), ...submitsOf(1, 8)] });
      // Alone, account 1 takes every worker of the model.
      const alone = await queue.claim(ask('A', 2_000, { max: 10, ...share }));
      expect(countOf(await accountsOf(store, alone), 1)).toBe(4);
      const [done] = alone.started;
      if (done === undefined) throw new Error('nothing started');
      // Account 2 has work due now; account 1 holds more than its share (2 of 4). One worker comes free, and the
      // claim starts at account 1 (accounts in turn after acct_2): the share still gives the worker to account 2.
      await commitOne(store, submit('req_2_01', { account: 2, now: 2_100 }));
      expect(await queue.recordSuccess({ ...done, owner: 'A' }, answer('done'), 2_200)).toBe('recorded');
      const next = await queue.claim(ask('A', 2_300, { max: 1, after: accountId(2), ...share }));
      expect(next.started.map((s) => s.reqId)).toEqual(['req_2_01']);
    });

    it("counts a model's workers as the claiming process's when the model has no bound of its own", async () => {
      const [store] = await pair();
      const queue = queueOf(store);
      await store.commit({ commands: [createAccount(1), createAccount(2), ...submitsOf(1, 4), ...submitsOf(2, 4)] });
      // 4 workers, a share of 0.5: account 1 may hold 2 while account 2 has work due; with `after` acct_2 the claim
      // would otherwise begin at account 1 in every round.
      const share = { accountShare: 0.5, workers: 4 };
      const first = await queue.claim(ask('A', 2_000, { max: 3, after: accountId(2), ...share }));
      expect(await accountsOf(store, first)).toEqual([accountId(1), accountId(2), accountId(1)]);
      const second = await queue.claim(ask('A', 2_000, { max: 1, after: accountId(2), ...share }));
      expect(await accountsOf(store, second)).toEqual([accountId(2)]);
    });

    itWith(
      factory.another,
      "holds an account's maxProcessing exactly when owners on two handles claim at once",
      async (another) => {
        const first = await open();
        const second = await another(first);
        await first.commit({
          commands: [createAccount(1), createAccount(2), ...submitsOf(1, 12), ...submitsOf(2, 12)],
        });
        const claims = await Promise.all(
          oneToN(8).map((i) =>
            queueOf(i % 2 === 0 ? first : second).claim(ask(`owner_${i}`, 2_000, { max: 3, ...bounded })),
          ),
        );
        const accounts = (await Promise.all(claims.map((claim) => accountsOf(first, claim)))).flat();
        expect(countOf(accounts, 1)).toBe(2);
        expect(countOf(accounts, 2)).toBe(2);
      },
    );

    itWith(
      factory.anotherProcess,
      "holds an account's maxProcessing exactly when owners in this process and another claim at once",
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        await store.commit({ commands: [createAccount(1), ...submitsOf(1, 16)] });
        const claims = await Promise.all(
          oneToN(12).map((i) =>
            queueOf(i % 2 === 0 ? store : other).claim(ask(`owner_${i}`, 2_000, { max: 2, ...bounded })),
          ),
        );
        expect(claims.flatMap((claim) => claim.started)).toHaveLength(2);
      },
    );
  });
