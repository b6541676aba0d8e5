import { describe, expect, it } from 'vitest';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { QueueFull } from '../../../src/domain/errors.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  answer,
  batchIdOf,
  claimOne,
  commitOne,
  createBatch,
  createFile,
  eventsOf,
  fileIdOf,
  lineSubmit,
  oneToN,
  policy,
  queueOf,
  startBatch,
  statusOf,
  submit,
  takeBatch,
} from '../fixtures.js';

/** A batch of acct_1 validated and in progress, none of its `total` lines queued yet. */
const batchStarted = async (store: StoreShape, total: number) => {
  const batchId = batchIdOf(1);
  await store.commit({ commands: [createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1)), takeBatch(batchId)] });
  await commitOne(store, startBatch(batchId, total));
  return batchId;
};

const typesOf = (outcome: Awaited<ReturnType<typeof commitOne>>) => eventsOf(outcome).map((event) => event.type);

/** What a refusal says of the count, or the events when it was taken. */
const refusalOf = (outcome: Awaited<ReturnType<typeof commitOne>>) =>
  outcome instanceof QueueFull
    ? { count: outcome.count, maxQueued: outcome.maxQueued, message: outcome.message }
    : typesOf(outcome);

/**
 * Contract 15 with issue 41: an account's bound of requests waiting or being processed (`maxQueued`) counts its
 * interactive requests only, decided inside the write; a batch's lines never count there (they have bounds of their
 * own), whether queued in a write of their own or beside submits, and whether they wait, run or end.
 */
export const queuedCountFeatures = ({ open }: Contract) =>
  describe("an account's queued count", () => {
    it("counts an account's interactive requests and never its batch lines, so lines beyond the bound leave its submits room, and a refusal gives the count and the bound", async () => {
      const store = await open();
      const batchId = await batchStarted(store, 8);
      // Five lines queued alone, more than the bound of 3.
      await store.commit({ commands: oneToN(5).map((line) => lineSubmit(batchId, line)) });
      // Three interactive submits, and a sixth line in the same write between them: all taken.
      const outcomes = await store.commit({
        commands: [
          submit('req_1', { maxQueued: 3 }),
          lineSubmit(batchId, 6),
          submit('req_2', { maxQueued: 3 }),
          submit('req_3', { maxQueued: 3 }),
          submit('req_4', { maxQueued: 3 }),
        ],
      });
      expect(outcomes.map(refusalOf)).toEqual([
        ['RequestQueued'],
        ['RequestQueued'],
        ['RequestQueued'],
        ['RequestQueued'],
        {
          count: 3,
          maxQueued: 3,
          message:
            'the queue is full: this account already has 3 requests waiting or being processed (its plan allows 3); wait for some to finish (or cancel some) and retry',
        },
      ]);
      // A lower bound (the plan changed since): the refusal still gives the account's count, not the bound.
      expect(refusalOf(await commitOne(store, submit('req_5', { maxQueued: 2 })))).toMatchObject({
        count: 3,
        maxQueued: 2,
      });
      // A line is queued whatever the count, even one sent with a bound (lines have bounds of their own).
      const line = lineSubmit(batchId, 7) as Extract<Command, { type: 'Submit' }>;
      expect(typesOf(await commitOne(store, { ...line, maxQueued: 1 }))).toEqual(['RequestQueued']);
      expect(await statusOf(store, lineRequestId(batchId, 7))).toBe('waiting');
    });

    it("keeps an account's queued count unchanged while its lines run and end, and takes one off when an interactive request ends", async () => {
      const store = await open();
      const queue = queueOf(store);
      const batchId = await batchStarted(store, 4);
      await store.commit({ commands: oneToN(4).map((line) => lineSubmit(batchId, line)) });
      // The four lines run (nothing else is due), and the account's two submits are still taken.
      const held = [];
      for (const line of oneToN(4)) held.push(await claimOne(queue, 'A', 2_000 + line, { max: 1 }));
      expect(held.map((h) => h.reqId)).toEqual(oneToN(4).map((line) => lineRequestId(batchId, line)));
      for (const n of oneToN(2))
        expect(refusalOf(await commitOne(store, submit(`req_${n}`, { maxQueued: 2, now: 2_010 })))).toEqual([
          'RequestQueued',
        ]);
      expect(refusalOf(await commitOne(store, submit('req_3', { maxQueued: 2, now: 2_020 })))).toMatchObject({
        count: 2,
      });
      // The lines end, one completed, one failed for good, two cancelled: the count stays at the two submits.
      expect(await queue.recordSuccess(held[0] as (typeof held)[0], answer('one'), 2_100)).toBe('recorded');
      expect(
        await queue.recordFailure(held[1] as (typeof held)[0], 'upstream 400', { ...policy, maxAttempts: 1 }, 2_100),
      ).toBe('recorded');
      await store.commit({
        commands: [3, 4].map((line) => ({ type: 'Cancel', reqId: lineRequestId(batchId, line), now: 2_200 }) as const),
      });
      expect(refusalOf(await commitOne(store, submit('req_4', { maxQueued: 2, now: 2_300 })))).toMatchObject({
        count: 2,
      });
      // An interactive request that ends makes room for one.
      await commitOne(store, { type: 'Cancel', reqId: 'req_1', now: 2_400 });
      expect(refusalOf(await commitOne(store, submit('req_5', { maxQueued: 2, now: 2_500 })))).toEqual([
        'RequestQueued',
      ]);
      expect(refusalOf(await commitOne(store, submit('req_6', { maxQueued: 2, now: 2_600 })))).toMatchObject({
        count: 2,
      });
    });
  });
