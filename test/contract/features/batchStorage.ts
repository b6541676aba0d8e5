import { describe, expect, it } from 'vitest';
import { linesAheadCounter, storedBytesCounter } from '../../../src/domain/accountCounters.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { AccountLimitReached, LifecycleViolation } from '../../../src/domain/errors.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  answer,
  batchCommand,
  batchIdOf,
  claimOne,
  commitOne,
  createBatch,
  createFile,
  eventsOf,
  fileCommand,
  fileIdOf,
  lineSubmit,
  oneToN,
  queueOf,
  batchRunner as runner,
  startBatch as start,
  takeBatch as take,
} from '../fixtures.js';

/** Bytes of every file `createFile` makes. */
const fileBytes = 1_234;

const storedBytes = (store: StoreShape, account = 1) =>
  store.reads.accountCount(storedBytesCounter(accountId(account)));

/** Line `line` of the batch, bounded by its account's stored bytes, each line not ended holding `answerRoom` (what
 * the batch runner sends: queueLines.ts). */
const boundedLine = (batchId: string, line: number, maxStoredBytes: number, answerRoom = 0): Command => ({
  ...(lineSubmit(batchId, line) as Extract<Command, { type: 'Submit' }>),
  maxStoredBytes,
  answerRoom,
});

/** A batch over file `n` (of `createFile`'s size), validated with `lines` lines, none queued. */
const batchStarted = async (store: StoreShape, n: number, lines: number) => {
  const batchId = batchIdOf(n);
  await store.commit({ commands: [createFile(fileIdOf(n)), createBatch(batchId, fileIdOf(n)), take(batchId)] });
  await commitOne(store, start(batchId, lines));
  return batchId;
};

/** Claims the next line and records `text` as its answer. */
const answerNext = async (store: StoreShape, text: string, now: number) => {
  const queue = queueOf(store);
  const held = await claimOne(queue, 'A', now, { max: 1 });
  expect(await queue.recordSuccess(held, answer(text), now)).toBe('recorded');
  return held.reqId;
};

/**
 * Issue 40: what a batch makes the store keep counts in its account's stored bytes (`maxFileStorageBytes`), in the
 * same write as the change, on every store: each completed line's answer (its characters) while its request keeps it,
 * and, while the batch is open, as much again for the output file to come; once the batch ends, its output file by its
 * bytes. A new line of a batch is refused inside the write while the account is at its bound (its batch waits for
 * room), whoever else wrote; a line queued already is refused as such, whatever the room.
 */
export const batchStorageFeatures = ({ open }: Contract) =>
  describe("a batch's answers in its account's stored bytes", () => {
    it('counts each answer twice while its batch is open, the output file instead of the room once it ends, and the answer no more once its line expires', async () => {
      const store = await open();
      const batchId = await batchStarted(store, 1, 3);
      await store.commit({ commands: oneToN(3).map((line) => lineSubmit(batchId, line)) });
      expect(await storedBytes(store)).toBe(fileBytes);
      const first = await answerNext(store, 'a'.repeat(100), 2_000);
      expect(await storedBytes(store)).toBe(fileBytes + 2 * 100);
      await answerNext(store, 'b'.repeat(40), 2_100);
      await answerNext(store, 'c'.repeat(7), 2_200);
      expect(await storedBytes(store)).toBe(fileBytes + 2 * 147);
      expect((await store.reads.batch(batchId))?.counts).toMatchObject({ answerChars: 147, keptAnswerChars: 147 });
      // Ended with its output file (500 bytes) in one write: the room for it is given back, the file counts.
      await commitOne(store, batchCommand(batchId, { type: 'FinalizeBatch', owner: runner, now: 2_300 }));
      const ended = await commitOne(
        store,
        batchCommand(batchId, {
          type: 'EndBatch',
          owner: runner,
          outputFile: { fileId: fileIdOf(9), filename: 'out.jsonl', bytes: 500, sha256: 'a'.repeat(64) },
          errorFile: undefined,
          completed: 3,
          failed: 0,
          now: 2_400,
        }),
      );
      expect(eventsOf(ended).map((event) => event.type)).toEqual(['FileCreated', 'BatchEnded']);
      expect(await storedBytes(store)).toBe(fileBytes + 147 + 500);
      // A line's request expires: its answer is deleted, and counts no more.
      await commitOne(store, { type: 'Expire', reqId: first, now: 1_001 + 60_000 });
      expect(await storedBytes(store)).toBe(fileBytes + 47 + 500);
      expect((await store.reads.batch(batchId))?.counts).toMatchObject({ answerChars: 147, keptAnswerChars: 47 });
      // The output file deleted: what is left is the input file and the answers kept.
      await commitOne(store, fileCommand(fileIdOf(9), { type: 'DeleteFile', accountId: accountId(1), now: 2_500 }));
      expect(await storedBytes(store)).toBe(fileBytes + 47);
    });

    it('refuses a new line while its account is at its bound, inside the write, and takes it once there is room; a line queued already is refused as such', async () => {
      const store = await open();
      const batchId = await batchStarted(store, 1, 4);
      // Room for the file and one answer of 100 (kept, and its room in the output file): the bound is reached then.
      const bound = fileBytes + 200;
      const firstTwo = await store.commit({
        commands: [boundedLine(batchId, 1, bound), boundedLine(batchId, 2, bound)],
      });
      expect(firstTwo.map((outcome) => eventsOf(outcome).length)).toEqual([1, 1]);
      await answerNext(store, 'x'.repeat(100), 2_000);
      expect(await storedBytes(store)).toBe(bound);
      const atBound = await commitOne(store, boundedLine(batchId, 3, bound));
      expect(atBound).toBeInstanceOf(AccountLimitReached);
      expect(atBound).toMatchObject({ budget: 'file_storage', limit: bound, count: bound });
      // Line 2 was queued before the bound was reached: refused as queued already, not for room.
      expect(await commitOne(store, boundedLine(batchId, 2, bound))).toBeInstanceOf(LifecycleViolation);
      // Another account's lines are bound by its own bytes.
      const other = batchIdOf(2);
      await store.commit({
        commands: [
          createFile(fileIdOf(2), { account: 2 }),
          createBatch(other, fileIdOf(2), { account: 2 }),
          take(other),
        ],
      });
      await commitOne(store, start(other, 1));
      expect(
        eventsOf(await commitOne(store, { ...boundedLine(other, 1, bound), accountId: accountId(2) } as Command)),
      ).toHaveLength(1);
      // Room made (the first file deleted) and taken in the same write by the next line; the one after is refused.
      const roomMade = await store.commit({
        commands: [
          fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(1), now: 2_100 }),
          boundedLine(batchId, 3, bound),
        ],
      });
      expect(eventsOf(roomMade[1]).map((event) => event.type)).toEqual(['RequestQueued']);
      expect(await store.reads.request(lineRequestId(batchId, 3))).toMatchObject({ status: 'waiting' });
      // A line without the bound (a batch runner of an older version) is not held to it.
      await answerNext(store, 'y'.repeat(1_000), 2_200);
      expect(await commitOne(store, boundedLine(batchId, 4, bound))).toBeInstanceOf(AccountLimitReached);
      expect(eventsOf(await commitOne(store, lineSubmit(batchId, 4)))).toHaveLength(1);
    });

    it('holds room for the answers of the lines not ended: lines are queued while their room fits under the bound, in one write or several, and none while its room does not fit, even with none ahead', async () => {
      const store = await open();
      const batchId = await batchStarted(store, 1, 8);
      // Room for three and a half lines' answers of 100 (each held twice) beside the file.
      const bound = fileBytes + 3 * 200 + 100;
      const inOne = await store.commit({ commands: oneToN(4).map((line) => boundedLine(batchId, line, bound, 200)) });
      expect(
        inOne.map((outcome) => (outcome instanceof AccountLimitReached ? 'refused' : eventsOf(outcome).length)),
      ).toEqual([1, 1, 1, 'refused']);
      expect(await store.reads.accountCount(linesAheadCounter(accountId(1)))).toBe(3);
      // A line answers 30 characters: 60 kept, its room (200) given back, so room for one more line.
      await answerNext(store, 'z'.repeat(30), 2_000);
      expect(await store.reads.accountCount(linesAheadCounter(accountId(1)))).toBe(2);
      expect(eventsOf(await commitOne(store, boundedLine(batchId, 4, bound, 200)))).toHaveLength(1);
      expect(await commitOne(store, boundedLine(batchId, 5, bound, 200))).toBeInstanceOf(AccountLimitReached);
      // Every line ended: room for three lines again (with what they kept); a line's room beyond what is left, none.
      for (const at of [2_100, 2_200, 2_300]) await answerNext(store, 'q', at);
      expect(await store.reads.accountCount(linesAheadCounter(accountId(1)))).toBe(0);
      const beyond = await store.commit({
        commands: [boundedLine(batchId, 5, bound, 10 * bound), boundedLine(batchId, 5, bound, 200)],
      });
      expect(beyond.map((outcome) => outcome instanceof AccountLimitReached)).toEqual([true, false]);
    });
  });
