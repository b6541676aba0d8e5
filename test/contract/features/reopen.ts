import { describe, expect } from 'vitest';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  answer,
  ask,
  claimOne,
  commitOne,
  createAccount,
  createKey,
  queueOf,
  replay,
  seqsOf,
  submit,
} from '../fixtures.js';

/** Everything the read model answers about the data the test commits, read through the port. */
const everything = async (store: StoreShape) => ({
  log: await replay(store),
  lastSeq: await store.reads.lastSeq(),
  accounts: await store.reads.accounts(),
  byEmail: await store.reads.accountIdByEmail('user2@example.com'),
  keys: await store.reads.keysOf(accountId(1)),
  keyByHash: await store.reads.keyIdByHash('hash_key_b'),
  accountsVersion: await store.reads.accountsVersion(),
  waiting: await store.reads.requestWithText('req_waiting'),
  processing: await store.reads.requestWithText('req_processing'),
  completed: await store.reads.requestWithText('req_completed'),
  requestsOf: await store.reads.requestsOf(accountId(1), { limit: 10 }),
  dueForExpiry: await store.reads.dueForExpiry(Number.MAX_SAFE_INTEGER, 10),
  dueWork: await store.reads.dueWork(5_000),
  queueDepths: await store.reads.queueDepths(5_000, 100),
  usage: await store.reads.usageByDay(accountId(2), 0, 1),
  countsByHour: await store.reads.requestCountsByHour(accountId(1), 0, 2),
  keyLastUsed: await store.reads.keyLastUsed('key_a'),
  limiter: await store.reads.limiterState(accountId(1), 'submits'),
  idempotent: await commitOne(store, submit('req_repeat', { key: { key: 'k', body: 'b' }, now: 6_000 })),
});

export const reopenFeatures = ({ open, itWith, factory }: Contract) =>
  describe('reopen', () => {
    itWith(
      factory.reopen,
      'finds everything committed after the store is closed and opened again: the log, accounts by email, keys of an account, requests with their text, the indexes, key uses and rate-limit states',
      async (reopen) => {
        const store = await open();
        await store.commit({
          commands: [createAccount(1), createAccount(2), createKey(1, 'key_a'), createKey(2, 'key_b')],
          keyUses: [{ keyId: 'key_a', at: 900 }],
        });
        // Rate-limit states are not the log's, but a restarted server (unlike a restarted machine) finds them.
        await store.spend([{ accountId: accountId(1), budget: 'submits', limit: 5, windowMs: 60_000, now: 950 }]);
        await store.commit({
          commands: [
            submit('req_waiting', { now: 1_000, prompt: 'still waiting', key: { key: 'k', body: 'b' } }),
            submit('req_processing', { now: 1_001, prompt: 'being worked on' }),
            submit('req_completed', { now: 1_002, account: 2, prompt: 'asked' }),
          ],
        });
        const queue = queueOf(store);
        const processing = await claimOne(queue, 'A', 1_001, { max: 1, after: accountId(2) });
        expect(processing.reqId).toBe('req_waiting');
        // req_waiting goes back (released); req_processing stays held by A; req_completed is answered.
        await queue.release(processing, 1_500);
        await commitOne(store, {
          type: 'StartAttempt',
          reqId: 'req_processing',
          now: 1_600,
          owner: 'A',
          leaseMs: 10_000,
        });
        await commitOne(store, {
          type: 'StartAttempt',
          reqId: 'req_completed',
          now: 1_700,
          owner: 'A',
          leaseMs: 10_000,
        });
        await queue.recordSuccess({ reqId: 'req_completed', attempt: 1, owner: 'A' }, answer('answered'), 1_800);

        const before = await everything(store);
        expect(before.keys.map((key) => key.keyId)).toEqual(['key_a']);
        expect(before.byEmail).toBe(accountId(2));
        expect(before.waiting).toMatchObject({ state: { status: 'waiting' }, text: 'still waiting' });
        expect(before.processing).toMatchObject({ state: { status: 'processing' }, text: 'being worked on' });
        expect(before.completed).toMatchObject({ state: { status: 'completed' }, text: 'answered' });
        expect(before.idempotent).toEqual({ events: [], replayOf: 'req_waiting' });
        expect(before.usage).toEqual([{ day: 0, inputTokens: 3, outputTokens: 5 }]);
        expect(before.countsByHour).toEqual([2, 0]);
        expect(before.keyLastUsed).toBe(900);
        expect(before.limiter).toBe(950 + 60_000 / 5);

        const reopened = await reopen(store);
        expect(await everything(reopened)).toEqual(before);
        // And it goes on from there: the queue and the leases as they were.
        const next = await commitOne(reopened, submit('req_next', { now: 7_000 }));
        expect(seqsOf(next)).toEqual([before.lastSeq + 1]);
        const taken = await queueOf(reopened).claim(ask('B', 11_600));
        expect(taken.started.map((started) => started.reqId).sort()).toEqual([
          'req_next',
          'req_processing',
          'req_waiting',
        ]);
      },
    );
  });
