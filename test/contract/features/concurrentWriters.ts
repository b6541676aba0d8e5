import { describe, expect } from 'vitest';
import { QueueFull, Refused } from '../../../src/domain/errors.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  accountIdOf,
  answer,
  ask,
  commitOne,
  createAccount,
  eventsOf,
  oneToN,
  queueOf,
  replay,
  reqIdOf,
  seqsOf,
  submit,
} from '../fixtures.js';

/** How many `RequestProcessingStarted` the log holds per request. */
const startsInLog = async (store: StoreShape) => {
  const starts = new Map<string, number>();
  for (const event of await replay(store))
    if (event.type === 'RequestProcessingStarted') starts.set(event.reqId, (starts.get(event.reqId) ?? 0) + 1);
  return starts;
};

/** The work queue of `even`'s handle for even numbers, of `odd`'s for odd ones. */
const alternating = (even: StoreShape, odd: StoreShape) => {
  const queues = [queueOf(even), queueOf(odd)] as const;
  return (i: number) => queues[i % 2 === 0 ? 0 : 1];
};

/**
 * Decisions that must be exact whoever else writes: each command is decided against the state the store holds at
 * commit time, so two handles (two server processes, two machines) sending at once never both win.
 */
export const concurrentWriterFeatures = ({ open, itWith, factory }: Contract) =>
  describe('decisions against concurrent writers', () => {
    itWith(
      factory.another,
      'makes exactly one request of submits with the same idempotency key sent through two handles at once',
      async (another) => {
        const first = await open();
        const second = await another(first);
        await commitOne(first, createAccount(1));
        const key = { key: 'retry-me', body: 'same body' };
        const outcomes = await Promise.all(
          oneToN(8).map((i) => commitOne(i % 2 === 0 ? first : second, submit(`req_${i}`, { key, now: 1_000 + i }))),
        );
        const made = outcomes.filter((outcome) => eventsOf(outcome).length > 0);
        expect(made).toHaveLength(1);
        const reqId = reqIdOf(eventsOf(made[0])[0]);
        for (const outcome of outcomes)
          if (outcome !== made[0]) expect(outcome).toEqual({ events: [], replayOf: reqId });
        const queued = (await replay(second)).filter((event) => event.type === 'RequestQueued');
        expect(queued.map((event) => event.reqId)).toEqual([reqId]);
        expect((await first.reads.requestsOf(accountId(1), { limit: 10 })).map((r) => r.context.reqId)).toEqual([
          reqId,
        ]);
      },
    );

    itWith(
      factory.another,
      'creates one account when two handles create accounts with the same email at once, and refuses the others',
      async (another) => {
        const first = await open();
        const second = await another(first);
        const outcomes = await Promise.all(
          oneToN(6).map((i) => commitOne(i % 2 === 0 ? first : second, createAccount(i, 'taken@example.com'))),
        );
        const created = outcomes.filter((outcome) => eventsOf(outcome).length > 0);
        expect(created).toHaveLength(1);
        expect(outcomes.filter((outcome) => outcome instanceof Refused)).toHaveLength(5);
        const winner = accountIdOf(eventsOf(created[0])[0]);
        expect(await first.reads.accountIdByEmail('taken@example.com')).toBe(winner);
        expect(await second.reads.accountIdByEmail('taken@example.com')).toBe(winner);
        expect((await second.reads.accounts()).map((account) => account.accountId)).toEqual([winner]);
      },
    );

    itWith(
      factory.another,
      'starts each due request under exactly one owner when owners on two handles claim at once',
      async (another) => {
        const first = await open();
        const second = await another(first);
        const reqIds = oneToN(12).map((i) => `req_${String(i).padStart(2, '0')}`);
        await first.commit({ commands: reqIds.map((reqId, i) => submit(reqId, { account: 1 + (i % 3) })) });
        const queueFor = alternating(first, second);
        const claims = await Promise.all(oneToN(6).map((i) => queueFor(i).claim(ask(`owner_${i}`, 2_000, { max: 3 }))));
        const started = claims.flatMap((claim) => claim.started.map((s) => s.reqId));
        expect([...started].sort()).toEqual(reqIds);
        const starts = await startsInLog(second);
        expect([...starts.keys()].sort()).toEqual(reqIds);
        expect([...starts.values()].every((count) => count === 1)).toBe(true);
        for (const [i, claim] of claims.entries())
          for (const { reqId } of claim.started)
            expect((await first.reads.request(reqId))?.context.owner).toBe(`owner_${i + 1}`);
        expect(await first.reads.dueWork(2_000)).toEqual({ now: false, next: 12_000 });
      },
    );

    itWith(
      factory.anotherProcess,
      'makes exactly one request of submits with the same idempotency key sent by this process and another at once',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const key = { key: 'retry-me', body: 'same body' };
        const submitted = (i: number) => submit(`req_${i}`, { key, now: 1_000 + i });
        const outcomes = await Promise.all(
          oneToN(16).map((i) => (i % 2 === 0 ? commitOne(store, submitted(i)) : commitOne(other, submitted(i)))),
        );
        const made = outcomes.filter((outcome) => eventsOf(outcome).length > 0);
        expect(made).toHaveLength(1);
        const reqId = reqIdOf(eventsOf(made[0])[0]);
        for (const outcome of outcomes)
          if (outcome !== made[0]) expect(outcome).toEqual({ events: [], replayOf: reqId });
        expect((await replay(store)).map(reqIdOf)).toEqual([reqId]);
      },
    );

    itWith(
      factory.anotherProcess,
      'starts each due request under exactly one owner when owners in this process and another claim at once',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const reqIds = oneToN(24).map((i) => `req_${String(i).padStart(2, '0')}`);
        await store.commit({ commands: reqIds.map((reqId, i) => submit(reqId, { account: 1 + (i % 4) })) });
        // One request per claim, more claims than requests: most claims race for the last few requests.
        const claimsOf = (committer: Pick<StoreShape, 'commit'>, side: string) =>
          oneToN(15).map(async (i) => {
            const owner = `${side}_${i}`;
            const claimed = await queueOf(committer).claim(ask(owner, 2_000, { max: 1 }));
            return claimed.started.map(({ reqId }) => ({ reqId, owner }));
          });
        const started = (await Promise.all([...claimsOf(store, 'here'), ...claimsOf(other, 'there')])).flat();
        expect(started.map(({ reqId }) => reqId).sort()).toEqual(reqIds);
        expect(new Set(started.map(({ owner }) => owner.split('_')[0]))).toEqual(new Set(['here', 'there']));
        const starts = await startsInLog(store);
        expect([...starts.keys()].sort()).toEqual(reqIds);
        expect([...starts.values()].every((count) => count === 1)).toBe(true);
        for (const { reqId, owner } of started) expect((await store.reads.request(reqId))?.context.owner).toBe(owner);
      },
    );

    itWith(
      factory.another,
      "holds each model's bound across owners claiming at once through two handles, and frees a place when a request settles",
      async (another) => {
        const first = await open();
        const second = await another(first);
        await first.commit({
          commands: [
            ...oneToN(8).map((i) => submit(`req_slow_${i}`, { model: 'slow', account: 1 + (i % 2) })),
            ...oneToN(3).map((i) => submit(`req_echo_${i}`, { account: 3 })),
          ],
        });
        const modelLimits = { slow: 3 };
        const queueFor = alternating(first, second);
        const claims = await Promise.all(
          oneToN(4).map((i) => queueFor(i).claim(ask(`owner_${i}`, 2_000, { modelLimits }))),
        );
        const started = claims.flatMap((claim) => claim.started);
        expect(started.filter((s) => s.reqId.startsWith('req_slow_'))).toHaveLength(3);
        expect(started.filter((s) => s.reqId.startsWith('req_echo_'))).toHaveLength(3);
        // At the bound: another claim takes no more of the model, from either handle.
        expect((await queueFor(1).claim(ask('owner_9', 2_001, { modelLimits }))).started).toEqual([]);
        const slow = started.find((s) => s.reqId.startsWith('req_slow_'));
        const holder = claims.findIndex((claim) => claim.started.some((s) => s.reqId === slow?.reqId));
        if (slow === undefined) throw new Error('no slow request started');
        const held = { reqId: slow.reqId, attempt: slow.attempt, owner: `owner_${holder + 1}` };
        expect(await queueFor(0).recordSuccess(held, answer('done'), 2_002)).toBe('recorded');
        const [afterSettled, beside] = await Promise.all([
          queueFor(0).claim(ask('owner_10', 2_003, { modelLimits })),
          queueFor(1).claim(ask('owner_11', 2_003, { modelLimits })),
        ]);
        expect([...afterSettled.started, ...beside.started]).toHaveLength(1);
      },
    );

    itWith(
      factory.another,
      "holds an account's bound of queued requests across submits sent through two handles at once",
      async (another) => {
        const first = await open();
        const second = await another(first);
        const outcomes = await Promise.all(
          oneToN(10).map((i) => commitOne(i % 2 === 0 ? first : second, submit(`req_${i}`, { maxQueued: 4 }))),
        );
        expect(outcomes.filter((outcome) => seqsOf(outcome).length > 0)).toHaveLength(4);
        expect(outcomes.filter((outcome) => outcome instanceof QueueFull)).toHaveLength(6);
        expect(await first.reads.requestsOf(accountId(1), { limit: 20 })).toHaveLength(4);
      },
    );
  });
