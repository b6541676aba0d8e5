import { describe, expect, it } from 'vitest';
import type { Command } from '../../../src/domain/commands.js';
import type { StoredEvent } from '../../../src/domain/events.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { createAccount, eventsOf, oneToN, replay, seqsOf, submit, unknownCommand } from '../fixtures.js';

/** A mixed batch: accounts (one refused for its email), submits, a start, a completion, and a command that throws. */
const batchNumber = (b: number): Command[] => {
  const reqId = `req_${b}`;
  const commands: Command[] = [createAccount(100 + b), submit(reqId, { now: 1_000 + b })];
  if (b % 2 === 0) commands.push({ type: 'StartAttempt', reqId, now: 1_001 + b });
  if (b % 4 === 0) commands.push({ type: 'RecordSuccess', reqId, responseChars: 2, response: 'ok', now: 1_002 + b });
  if (b % 3 === 0) commands.push(createAccount(200 + b, `user${100 + b}@example.com`));
  if (b % 5 === 0) commands.push(unknownCommand(`req_x${b}`));
  return commands;
};

/** Commits the batches one after another; returns the events the outcomes named, in commit order. */
const commitInTurn = async (store: StoreShape, batches: readonly Command[][]) => {
  const appended: StoredEvent[] = [];
  for (const commands of batches) {
    const outcomes = await store.commit({ commands });
    for (const outcome of outcomes) appended.push(...eventsOf(outcome));
  }
  return appended;
};

/** Each batch is one write: its events take consecutive numbers. */
const expectEachBatchConsecutive = (batches: readonly number[][]) => {
  for (const seqs of batches) expect(seqs).toEqual(oneToN(seqs.length).map((i) => (seqs[0] ?? 0) + i - 1));
};

export const orderingFeatures = ({ open, itWith, factory }: Contract) =>
  describe('ordering and gap-free replay', () => {
    it('numbers the events of batches committed one after another 1..n without gaps, in commit order, and replays them as committed', async () => {
      const store = await open();
      expect(await store.reads.lastSeq()).toBe(0);
      expect(await replay(store)).toEqual([]);
      const appended = await commitInTurn(
        store,
        oneToN(30).map((b) => batchNumber(b)),
      );
      expect(appended.map((event) => event.seq)).toEqual(oneToN(appended.length));
      expect(appended.length).toBeGreaterThan(60);
      expect(await replay(store)).toEqual(appended);
      expect(await store.reads.lastSeq()).toBe(appended.length);
    });

    it('replays from any sequence number, also one inside a batch, and nothing from past the end', async () => {
      const store = await open();
      const appended = await commitInTurn(
        store,
        oneToN(8).map((b) => batchNumber(b)),
      );
      for (const fromSeq of oneToN(appended.length + 2))
        expect(await replay(store, fromSeq)).toEqual(appended.slice(fromSeq - 1));
    });

    it('keeps the numbering gap-free when many batches are handed to one handle at once, each batch in one run of numbers', async () => {
      const store = await open();
      const outcomes = await Promise.all(oneToN(40).map((b) => store.commit({ commands: batchNumber(b) })));
      const batches = outcomes.map((batch) => batch.flatMap(seqsOf));
      expectEachBatchConsecutive(batches);
      const all = batches.flat().sort((a, b) => a - b);
      expect(all).toEqual(oneToN(all.length));
      const replayed = await replay(store);
      expect(replayed.map((event) => event.seq)).toEqual(all);
      expect(replayed).toEqual(outcomes.flatMap((batch) => batch.flatMap(eventsOf)).sort((a, b) => a.seq - b.seq));
      expect(await store.reads.lastSeq()).toBe(all.length);
    });

    itWith(
      factory.another,
      'keeps one gap-free order when two handles commit at once, and both replay the same log',
      async (another) => {
        const first = await open();
        const second = await another(first);
        const outcomes = await Promise.all(
          oneToN(30).map((b) => (b % 2 === 0 ? first : second).commit({ commands: batchNumber(b) })),
        );
        const batches = outcomes.map((batch) => batch.flatMap(seqsOf));
        expectEachBatchConsecutive(batches);
        const all = batches.flat().sort((a, b) => a - b);
        expect(all).toEqual(oneToN(all.length));
        const replayed = await replay(first);
        expect(replayed.map((event) => event.seq)).toEqual(all);
        expect(await replay(second)).toEqual(replayed);
        expect(await first.reads.lastSeq()).toBe(all.length);
        expect(await second.reads.lastSeq()).toBe(all.length);
      },
    );

    itWith(
      factory.anotherProcess,
      'keeps one gap-free order when this process and another commit at once, each batch in one run of numbers',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const outcomes = await Promise.all(
          oneToN(30).map((b) => (b % 2 === 0 ? store : other).commit({ commands: batchNumber(b) })),
        );
        const batches = outcomes.map((batch) => batch.flatMap(seqsOf));
        expectEachBatchConsecutive(batches);
        const all = batches.flat().sort((a, b) => a - b);
        expect(all).toEqual(oneToN(all.length));
        const replayed = await replay(store);
        expect(replayed).toEqual(outcomes.flatMap((batch) => batch.flatMap(eventsOf)).sort((a, b) => a.seq - b.seq));
        expect(await store.reads.lastSeq()).toBe(all.length);
      },
    );

    itWith(
      factory.reopen,
      'replays the same log after the store is closed and opened again, and numbers new events after it',
      async (reopen) => {
        const store = await open();
        const before = await commitInTurn(
          store,
          oneToN(12).map((b) => batchNumber(b)),
        );
        const reopened = await reopen(store);
        expect(await replay(reopened)).toEqual(before);
        expect(await reopened.reads.lastSeq()).toBe(before.length);
        const after = await commitInTurn(reopened, [batchNumber(13)]);
        expect(after.map((event) => event.seq)).toEqual(oneToN(after.length).map((i) => before.length + i));
        expect(await replay(reopened)).toEqual([...before, ...after]);
      },
    );
  });
