import { describe, expect, it } from 'vitest';
import type { Contract } from '../contract.js';
import { answer, ask, claimOne, commitOne, policy, queueOf, replay, statusOf, submit } from '../fixtures.js';

/**
 * The work queue's leases: a worker (owner) holds the attempt it took until its lease ends, and only the holder may
 * extend it, give it back or record an outcome (fencing). Owner A works through the first handle, owner B through
 * a second handle where the adapter has one (as two server processes do), else through the same one. Leases are
 * 10 s (fixtures `ask`); times are the commands' own.
 */
export const leaseFeatures = ({ pair }: Contract) =>
  describe('leases and fencing', () => {
    it('lets the holder extend its lease and record its outcome while it holds the attempt', async () => {
      const [first] = await pair();
      await commitOne(first, submit('req_a'));
      const a = queueOf(first);
      const held = await claimOne(a, 'A', 1_000);
      expect(held).toEqual({ reqId: 'req_a', attempt: 1, owner: 'A' });
      expect(await first.reads.request('req_a')).toMatchObject({
        status: 'processing',
        context: { owner: 'A', attempts: 1, leaseUntil: 11_000 },
      });
      expect(await a.extendLease(held, 10_000, 9_000)).toBe(true);
      expect((await first.reads.request('req_a'))?.context.leaseUntil).toBe(19_000);
      expect(await first.reads.dueWork(11_000)).toEqual({ now: false, next: 19_000 });
      expect(await a.recordSuccess(held, answer('the answer'), 12_000)).toBe('recorded');
      expect(await first.reads.requestWithText('req_a')).toMatchObject({
        state: { status: 'completed', context: { inputTokens: 3, outputTokens: 5 } },
        text: 'the answer',
      });
      // Settled: the holder holds nothing any more.
      expect(await a.extendLease(held, 10_000, 12_001)).toBe(false);
      expect(await a.recordSuccess(held, answer('again'), 12_001)).toBe('refused');
    });

    it("lets another owner take over a lapsed lease, after which the first owner's outcome is refused and its lease cannot be extended", async () => {
      const [first, second] = await pair();
      await commitOne(first, submit('req_a'));
      const a = queueOf(first);
      const b = queueOf(second);
      const heldByA = await claimOne(a, 'A', 1_000);
      // Not lapsed yet: nothing to take over.
      expect(await b.claim(ask('B', 10_999))).toEqual({ started: [], gaveUp: [] });
      const takenOver = await b.claim(ask('B', 11_000));
      expect(takenOver).toEqual({ started: [{ reqId: 'req_a', attempt: 2, leaseUntil: 21_000 }], gaveUp: [] });
      const heldByB = { reqId: 'req_a', attempt: 2, owner: 'B' };

      expect(await a.recordSuccess(heldByA, answer('late answer'), 11_001)).toBe('refused');
      expect(await a.recordFailure(heldByA, 'late failure', policy, 11_001)).toBe('refused');
      expect(await a.extendLease(heldByA, 10_000, 11_001)).toBe(false);
      await a.release(heldByA, 11_001);
      expect(await first.reads.request('req_a')).toMatchObject({
        status: 'processing',
        context: { owner: 'B', attempts: 2, leaseUntil: 21_000 },
      });
      // The same owner name with the earlier attempt holds nothing either.
      expect(await b.recordSuccess({ ...heldByB, attempt: 1 }, answer('stale attempt'), 11_002)).toBe('refused');

      expect(await b.recordSuccess(heldByB, answer('from B'), 11_003)).toBe('recorded');
      expect((await first.reads.requestWithText('req_a'))?.text).toBe('from B');
      const outcomes = (await replay(first)).filter((event) =>
        [
          'RequestCompleted',
          'RequestAttemptFailed',
          'RequestFailed',
          'RequestLeaseExtended',
          'RequestReleased',
        ].includes(event.type),
      );
      expect(outcomes).toEqual([expect.objectContaining({ type: 'RequestCompleted', owner: 'B', attempt: 2 })]);
    });

    it('never lets an owner take over its own lapsed lease', async () => {
      const [first, second] = await pair();
      await commitOne(first, submit('req_a'));
      const a = queueOf(first);
      await claimOne(a, 'A', 1_000);
      expect(await a.claim(ask('A', 20_000))).toEqual({ started: [], gaveUp: [] });
      expect(await statusOf(first, 'req_a')).toBe('processing');
      // Another owner may.
      expect((await queueOf(second).claim(ask('B', 20_000))).started).toHaveLength(1);
    });

    it('puts a released request back in the queue at once, for any owner to take', async () => {
      const [first, second] = await pair();
      await commitOne(first, submit('req_a'));
      const a = queueOf(first);
      const held = await claimOne(a, 'A', 1_000);
      // Only the holder can give it back.
      await queueOf(second).release({ ...held, owner: 'B' }, 2_000);
      expect(await statusOf(first, 'req_a')).toBe('processing');
      await a.release(held, 2_000);
      expect(await statusOf(second, 'req_a')).toBe('waiting');
      expect((await second.reads.dueWork(2_000)).now).toBe(true);
      expect(await a.recordSuccess(held, answer('after release'), 2_000)).toBe('refused');
      const again = await claimOne(queueOf(second), 'B', 2_000);
      expect(again).toEqual({ reqId: 'req_a', attempt: 2, owner: 'B' });
    });

    it('fails a request for good when its lease lapses with no attempt left, and refuses its last holder afterwards', async () => {
      const [first, second] = await pair();
      await commitOne(first, submit('req_a', { maxAttempts: 1 }));
      const a = queueOf(first);
      const held = await claimOne(a, 'A', 1_000);
      const b = queueOf(second);
      expect(await b.claim(ask('B', 11_000))).toEqual({ started: [], gaveUp: ['req_a'] });
      expect(await second.reads.request('req_a')).toMatchObject({ status: 'failed' });
      expect(await a.recordSuccess(held, answer('too late'), 11_001)).toBe('refused');
      expect(await first.reads.dueWork(11_001)).toEqual({ now: false });
    });

    it('retries a failed attempt after its backoff, under any owner, and fails it for good once no attempt is left', async () => {
      const [first, second] = await pair();
      await commitOne(first, submit('req_a', { maxAttempts: 2 }));
      const a = queueOf(first);
      const b = queueOf(second);
      const firstAttempt = await claimOne(a, 'A', 1_000);
      expect(await a.recordFailure(firstAttempt, 'upstream 500', policy, 2_000)).toBe('recorded');
      // Waiting out the backoff (1 s after the first failure): not due before, due from then on.
      expect(await first.reads.request('req_a')).toMatchObject({ status: 'waiting', context: { availableAt: 3_000 } });
      expect(await b.claim(ask('B', 2_999))).toEqual({ started: [], gaveUp: [] });
      const secondAttempt = await claimOne(b, 'B', 3_000);
      expect(secondAttempt.attempt).toBe(2);
      expect(await b.recordFailure(secondAttempt, 'upstream 500 again', policy, 4_000)).toBe('recorded');
      expect(await second.reads.request('req_a')).toMatchObject({
        status: 'failed',
        context: { failureReason: expect.stringMatching(/gave up after 2 attempts: upstream 500 again/) },
      });
      expect(await a.claim(ask('A', 100_000))).toEqual({ started: [], gaveUp: [] });
    });
  });
