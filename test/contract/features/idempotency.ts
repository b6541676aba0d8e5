import { describe, expect, it } from 'vitest';
import { idempotencyWindowMs } from '../../../src/domain/commands.js';
import { IdempotencyKeyReused } from '../../../src/domain/errors.js';
import type { Contract } from '../contract.js';
import { commitOne, eventsOf, replay, reqIdOf, seqsOf, submit } from '../fixtures.js';

const key = { key: 'key-1', body: 'body A' };
const otherBody = { key: 'key-1', body: 'body B' };
const dayMs = 24 * 60 * 60 * 1_000;

/**
 * An idempotency key answers with the request it made while that request lives and for 24 hours at most (product
 * contract 12; `idempotencyWindowMs`); decided inside the store's write, after a restart too.
 */
export const idempotencyFeatures = ({ open }: Contract) =>
  describe('idempotency windows', () => {
    it('answers a repeat with the same key and body inside the window with the same request, appending nothing', async () => {
      const store = await open();
      expect(seqsOf(await commitOne(store, submit('req_1', { key, now: 1_000 })))).toEqual([1]);
      expect(await commitOne(store, submit('req_2', { key, now: 30_000 }))).toEqual({ events: [], replayOf: 'req_1' });
      // Also once the request has settled: it is still the answer while it lives.
      await store.commit({
        commands: [
          { type: 'StartAttempt', reqId: 'req_1', now: 31_000 },
          { type: 'RecordSuccess', reqId: 'req_1', responseChars: 4, response: 'done', now: 32_000 },
        ],
      });
      expect(await commitOne(store, submit('req_3', { key, now: 59_999 }))).toEqual({ events: [], replayOf: 'req_1' });
      expect(await store.reads.request('req_2')).toBeUndefined();
      expect(await store.reads.lastSeq()).toBe(3);
    });

    it('refuses the same key with another body inside the window, naming the request that holds it', async () => {
      const store = await open();
      await commitOne(store, submit('req_1', { key }));
      const reused = await commitOne(store, submit('req_2', { key: otherBody, now: 2_000 }));
      expect(reused).toBeInstanceOf(IdempotencyKeyReused);
      expect((reused as IdempotencyKeyReused).message).toMatch(/req_1/);
      expect(await store.reads.request('req_2')).toBeUndefined();
    });

    it('makes a new request for a key once its window has passed, and answers later repeats with the new one', async () => {
      expect(idempotencyWindowMs).toBe(dayMs);
      const store = await open();
      // Lives two days (the first a day and a half): the window, not the request's life, ends the key's answer.
      const longLived = { key, ttlMs: 2 * dayMs };
      await commitOne(store, submit('req_1', { key, ttlMs: 1.5 * dayMs, now: 1_000 }));
      const windowEnd = 1_000 + idempotencyWindowMs;
      expect(await commitOne(store, submit('req_2', { ...longLived, now: windowEnd - 1 }))).toEqual({
        events: [],
        replayOf: 'req_1',
      });
      const renewed = await commitOne(store, submit('req_3', { ...longLived, now: windowEnd }));
      expect(eventsOf(renewed).map((event) => event.type)).toEqual(['RequestQueued']);
      expect(await commitOne(store, submit('req_4', { ...longLived, now: windowEnd + 1 }))).toEqual({
        events: [],
        replayOf: 'req_3',
      });
      expect(await commitOne(store, submit('req_5', { key: otherBody, now: windowEnd + 1 }))).toBeInstanceOf(
        IdempotencyKeyReused,
      );
      // The first request expiring later takes nothing from the key's new request.
      await commitOne(store, { type: 'Expire', reqId: 'req_1', now: 1_000 + 1.5 * dayMs });
      expect(await commitOne(store, submit('req_6', { ...longLived, now: 1_000 + 1.5 * dayMs }))).toEqual({
        events: [],
        replayOf: 'req_3',
      });
    });

    it('makes a new request for a key whose request has expired, inside the window, whether or not the expiry was written yet', async () => {
      const store = await open();
      await commitOne(store, submit('req_1', { key, now: 1_000 }));
      // Its time ran out at 61 s; nobody has expired it yet.
      expect(seqsOf(await commitOne(store, submit('req_2', { key, now: 61_000 })))).toEqual([2]);
      await commitOne(store, { type: 'Expire', reqId: 'req_2', now: 121_000 });
      expect(seqsOf(await commitOne(store, submit('req_3', { key, now: 122_000 })))).toEqual([4]);
      expect(await commitOne(store, submit('req_4', { key, now: 123_000 }))).toEqual({ events: [], replayOf: 'req_3' });
      // The first request, expired at last, takes nothing from the key's current request.
      expect(seqsOf(await commitOne(store, { type: 'Expire', reqId: 'req_1', now: 123_000 }))).toEqual([5]);
      expect(await commitOne(store, submit('req_5', { key, now: 124_000 }))).toEqual({ events: [], replayOf: 'req_3' });
    });

    it('keeps the keys of different accounts apart', async () => {
      const store = await open();
      await commitOne(store, submit('req_1', { key, account: 1 }));
      expect(seqsOf(await commitOne(store, submit('req_2', { key: otherBody, account: 2 })))).toEqual([2]);
      expect(await commitOne(store, submit('req_3', { key, account: 1 }))).toEqual({ events: [], replayOf: 'req_1' });
      expect(await commitOne(store, submit('req_4', { key: otherBody, account: 2 }))).toEqual({
        events: [],
        replayOf: 'req_2',
      });
    });

    it('answers a repeat within one batch with the request made earlier in that batch', async () => {
      const store = await open();
      const outcomes = await store.commit({
        commands: [submit('req_1', { key }), submit('req_2', { key }), submit('req_3', { key: otherBody })],
      });
      expect(seqsOf(outcomes[0])).toEqual([1]);
      expect(outcomes[1]).toEqual({ events: [], replayOf: 'req_1' });
      expect(outcomes[2]).toBeInstanceOf(IdempotencyKeyReused);
      expect((await replay(store)).map(reqIdOf)).toEqual(['req_1']);
    });
  });
