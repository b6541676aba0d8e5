import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import { queuedRequestOf } from '../../../src/domain/queuePosition.js';
import type { QueueDepths } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { answer, ask, claimOne, commitOne, policy, queueOf, statusOf, submit } from '../fixtures.js';

const sortedModels = (depths: QueueDepths) => ({
  ...depths,
  models: [...depths.models].sort((x, y) => x.model.localeCompare(y.model)),
});

/**
 * The indexes the workers and the sweeper read (`dueForExpiry`, `dueWork`, `queueDepths`) answer what the commits
 * imply, through a request's whole life: queued, started, retried after a backoff, settled, expired.
 */
export const indexFeatures = ({ open }: Contract) =>
  describe('expiry and processing indexes', () => {
    it('lists requests due for expiry by their expiry time, up to the limit, and no longer once they are expired', async () => {
      const store = await open();
      await store.commit({
        commands: [
          submit('req_1', { now: 1_000 }),
          submit('req_2', { now: 2_000, account: 2 }),
          submit('req_3', { now: 3_000 }),
        ],
      });
      expect(await store.reads.dueForExpiry(60_999, 10)).toEqual([]);
      expect(await store.reads.dueForExpiry(61_000, 10)).toEqual(['req_1']);
      expect(await store.reads.dueForExpiry(70_000, 10)).toEqual(['req_1', 'req_2', 'req_3']);
      expect(await store.reads.dueForExpiry(70_000, 2)).toEqual(['req_1', 'req_2']);
      // Settled requests still expire (their text goes then); expired ones are listed no more.
      await store.commit({
        commands: [
          { type: 'StartAttempt', reqId: 'req_2', now: 4_000 },
          { type: 'RecordSuccess', reqId: 'req_2', responseChars: 2, response: 'ok', now: 5_000 },
          { type: 'Cancel', reqId: 'req_3', now: 5_000 },
          { type: 'Expire', reqId: 'req_1', now: 61_000 },
        ],
      });
      expect(await store.reads.dueForExpiry(70_000, 10)).toEqual(['req_2', 'req_3']);
      await store.commit({
        commands: [
          { type: 'Expire', reqId: 'req_2', now: 62_000 },
          { type: 'Expire', reqId: 'req_3', now: 63_000 },
        ],
      });
      expect(await store.reads.dueForExpiry(Number.MAX_SAFE_INTEGER, 10)).toEqual([]);
      expect(await store.reads.requestWithText('req_2')).toMatchObject({
        state: { status: 'expired' },
        text: undefined,
      });
    });

    it('reads many requests with their text at once, in the order asked, with nothing for an id it does not hold', async () => {
      const store = await open();
      await store.commit({
        commands: [submit('req_1', { now: 1_000, prompt: 'first' }), submit('req_2', { now: 2_000, prompt: 'second' })],
      });
      const read = await store.reads.requestsWithText(['req_2', 'req_missing', 'req_1']);
      expect(read.map((stored) => stored?.text)).toEqual(['second', undefined, 'first']);
      expect(read.map((stored) => stored?.state.context.reqId)).toEqual(['req_2', undefined, 'req_1']);
      expect(await store.reads.requestsWithText([])).toEqual([]);
    });

    it('places a waiting request in the claim’s order: priority first, lanes in turn, its own model only, none once started', async () => {
      const store = await open();
      const tier = (command: Command, serviceTier: 'priority' | 'flex') => ({ ...command, serviceTier }) as Command;
      await store.commit({
        commands: [
          submit('req_a1', { now: 1_000 }),
          submit('req_a2', { now: 2_000 }),
          submit('req_a3', { now: 3_000 }),
          submit('req_b1', { now: 1_500, account: 2 }),
          tier(submit('req_bp', { now: 2_500, account: 2 }), 'priority'),
          tier(submit('req_af', { now: 500 }), 'flex'),
          submit('req_o1', { now: 500, account: 2, model: 'slow' }),
          submit('req_late', { now: 9_000, account: 2 }),
        ],
      });
      const position = async (reqId: string, now = 5_000, promoteAfterMs: number | undefined = undefined) => {
        const state = await store.reads.request(reqId);
        if (state === undefined) throw new Error(`no ${reqId}`);
        return store.reads.queuePosition(queuedRequestOf(state.context), now, promoteAfterMs);
      };
      const all = async (now?: number, promoteAfterMs?: number) =>
        Object.fromEntries(
          await Promise.all(
            ['req_bp', 'req_a1', 'req_b1', 'req_a2', 'req_a3', 'req_af', 'req_o1'].map(
              async (reqId) => [reqId, await position(reqId, now, promoteAfterMs)] as const,
            ),
          ),
        );
      // req_late is not due at 5,000: nothing counts it.
      expect(await all()).toEqual({
        req_bp: 0,
        req_a1: 1,
        req_b1: 1,
        req_a2: 3,
        req_a3: 4,
        req_af: 5,
        req_o1: 0,
      });
      // Promoted after 3.5 s waiting: req_a1 (waited 4 s) and req_b1 (3.5 s) go with priority's work.
      expect(await all(5_000, 3_500)).toEqual({
        req_bp: 0,
        req_a1: 0,
        req_b1: 0,
        req_a2: 3,
        req_a3: 4,
        req_af: 5,
        req_o1: 0,
      });
      // A request being processed is not in the queue; those behind it move up.
      const queue = queueOf(store);
      expect((await claimOne(queue, 'owner_a', 5_000, { max: 1 })).reqId).toBe('req_bp');
      expect(await position('req_bp')).toBeUndefined();
      expect(await position('req_a1')).toBe(0);
      expect(await position('req_af')).toBe(4);
    });

    it('tells whether work is due and when it next becomes due, and counts the waiting requests per model, through queueing, starting, retrying and settling', async () => {
      const store = await open();
      const queue = queueOf(store);
      await store.commit({
        commands: [
          submit('req_1', { now: 1_000 }),
          submit('req_2', { now: 2_000, account: 2, model: 'slow' }),
          submit('req_3', { now: 3_000 }),
        ],
      });
      expect(await store.reads.dueWork(999)).toEqual({ now: false, next: 1_000 });
      expect(await store.reads.dueWork(1_000)).toEqual({ now: true, next: 2_000 });
      expect(sortedModels(await store.reads.queueDepths(3_000, 100))).toEqual({
        models: [
          { model: 'echo', depth: 2, oldestAvailableAt: 1_000 },
          { model: 'slow', depth: 1, oldestAvailableAt: 2_000 },
        ],
        truncated: false,
      });
      expect((await store.reads.queueDepths(1_500, 100)).models).toContainEqual({
        model: 'slow',
        depth: 1,
        oldestAvailableAt: Number.POSITIVE_INFINITY,
      });
      expect((await store.reads.queueDepths(3_000, 2)).truncated).toBe(true);

      // Started (acct_1 first): out of the queue, into the processing index until its lease ends.
      const first = await claimOne(queue, 'A', 4_000, { max: 1 });
      expect(first.reqId).toBe('req_1');
      expect(await store.reads.dueWork(4_000)).toEqual({ now: true, next: 14_000 });
      expect(sortedModels(await store.reads.queueDepths(4_000, 100)).models).toEqual([
        { model: 'echo', depth: 1, oldestAvailableAt: 3_000 },
        { model: 'slow', depth: 1, oldestAvailableAt: 2_000 },
      ]);

      // Failed: back in the queue, not available before its backoff ends.
      expect(await queue.recordFailure(first, 'upstream 500', policy, 5_000)).toBe('recorded');
      expect(await store.reads.dueWork(5_000)).toEqual({ now: true, next: 6_000 });
      expect(sortedModels(await store.reads.queueDepths(5_000, 100)).models).toEqual([
        { model: 'echo', depth: 2, oldestAvailableAt: 3_000 },
        { model: 'slow', depth: 1, oldestAvailableAt: 2_000 },
      ]);
      const rest = await queue.claim(ask('A', 5_000));
      expect(rest.started.map((started) => started.reqId).sort()).toEqual(['req_2', 'req_3']);
      expect(await store.reads.dueWork(5_000)).toEqual({ now: false, next: 6_000 });
      expect(await store.reads.queueDepths(5_000, 100)).toEqual({
        models: [{ model: 'echo', depth: 1, oldestAvailableAt: Number.POSITIVE_INFINITY }],
        truncated: false,
      });

      // Settled (completed, cancelled while waiting): in neither index; a lease that lapses is due work.
      const [req2] = rest.started.filter((started) => started.reqId === 'req_2');
      expect(
        await queue.recordSuccess({ reqId: 'req_2', attempt: req2?.attempt ?? 0, owner: 'A' }, answer('ok'), 5_500),
      ).toBe('recorded');
      await commitOne(store, { type: 'Cancel', reqId: 'req_1', now: 5_600 });
      expect(await store.reads.queueDepths(5_600, 100)).toEqual({ models: [], truncated: false });
      expect(await store.reads.dueWork(5_600)).toEqual({ now: false, next: 15_000 });
      expect(await store.reads.dueWork(15_000)).toEqual({ now: true });

      // Expired while processing: no work left anywhere.
      await commitOne(store, { type: 'Expire', reqId: 'req_3', now: 63_000 });
      expect(await statusOf(store, 'req_3')).toBe('expired');
      expect(await store.reads.dueWork(63_000)).toEqual({ now: false });
      expect(await store.reads.queueDepths(63_000, 100)).toEqual({ models: [], truncated: false });
    });

    it('expires a due request a claim finds whose time has run out, rather than starting it', async () => {
      const store = await open();
      await store.commit({ commands: [submit('req_short', { ttlMs: 1_000 }), submit('req_long', { now: 1_500 })] });
      const claimed = await queueOf(store).claim(ask('A', 2_500));
      expect(claimed.started.map((started) => started.reqId)).toEqual(['req_long']);
      expect(await statusOf(store, 'req_short')).toBe('expired');
      expect(await store.reads.dueForExpiry(Number.MAX_SAFE_INTEGER, 10)).toEqual(['req_long']);
      expect(await store.reads.queueDepths(2_500, 100)).toEqual({ models: [], truncated: false });
    });
  });
