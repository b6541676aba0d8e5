import { describe, expect, it } from 'vitest';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import { type Command, isRefusal } from '../../../src/domain/commands.js';
import { Refused } from '../../../src/domain/errors.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  answer,
  ask,
  batchCommand,
  batchIdOf,
  claimOne,
  commitOne,
  createAccount,
  createBatch,
  createFile,
  eventsOf,
  fileCommand,
  fileIdOf,
  lineSubmit,
  oneToN,
  policy,
  queueOf,
  batchRunner as runner,
  startBatch as start,
  statusOf,
  submit,
  takeBatch as take,
} from '../fixtures.js';

/** A file and a batch over it, validated and in progress with `lines` lines queued. */
const batchInProgress = async (store: StoreShape, n: number, lines: number) => {
  const batchId = batchIdOf(n);
  await store.commit({ commands: [createFile(fileIdOf(n)), createBatch(batchId, fileIdOf(n)), take(batchId)] });
  await commitOne(store, start(batchId, lines));
  const outcomes = await store.commit({ commands: oneToN(lines).map((line) => lineSubmit(batchId, line)) });
  expect(outcomes.map((outcome) => eventsOf(outcome).map((event) => event.type))).toEqual(
    oneToN(lines).map(() => ['RequestQueued']),
  );
  return { batchId, lineIds: oneToN(lines).map((line) => lineRequestId(batchId, line)) };
};

const typesOf = (outcome: Awaited<ReturnType<typeof commitOne>>) => eventsOf(outcome).map((event) => event.type);

/**
 * Contract 16: batches and files are kept like requests, decided in the store's write: a file is listed while it
 * exists; a batch takes its input file only if it is its account's batch input; its lines are requests of their own,
 * queued only while it is in progress, and its counts follow every line's end exactly, in the same write; it is open
 * (its runner looks after it) until it ends; its lines wait in their account's batch lane, which a claim's
 * `batchShare` holds back while interactive work of the model is due.
 */
export const batchFeatures = ({ open }: Contract) =>
  describe('batches and files', () => {
    it("reads a file that was created and lists it among its account's files, and neither once it is deleted", async () => {
      const store = await open();
      await store.commit({ commands: [createFile(fileIdOf(1)), createFile(fileIdOf(2), { account: 2 })] });
      expect(await store.reads.file(fileIdOf(1))).toMatchObject({
        fileId: fileIdOf(1),
        accountId: accountId(1),
        purpose: 'batch',
        bytes: 1_234,
        createdAt: 100,
      });
      const all = { order: 'asc', limit: 10 } as const;
      expect(await store.reads.listOf('accountFiles', accountId(1), all)).toEqual([fileIdOf(1)]);
      expect(await store.reads.listOf('accountFiles', accountId(2), all)).toEqual([fileIdOf(2)]);
      // Only its own account deletes it.
      const foreign = await commitOne(
        store,
        fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(2), now: 150 }),
      );
      expect(foreign).toBeInstanceOf(Refused);
      const deleted = await commitOne(
        store,
        fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(1), now: 160 }),
      );
      expect(typesOf(deleted)).toEqual(['FileDeleted']);
      expect(await store.reads.file(fileIdOf(1))).toBeUndefined();
      expect(await store.reads.listOf('accountFiles', accountId(1), all)).toEqual([]);
      expect(await store.reads.file(fileIdOf(2))).toMatchObject({ accountId: accountId(2) });
      // A file is made once: its id again is refused, in the same write as its first making too.
      expect(await commitOne(store, createFile(fileIdOf(2), { account: 2 }))).toBeInstanceOf(Refused);
      const twice = await store.commit({ commands: [createFile(fileIdOf(3)), createFile(fileIdOf(3))] });
      expect(typesOf(twice[0])).toEqual(['FileCreated']);
      expect(twice[1]).toBeInstanceOf(Refused);
    });

    it("refuses a batch whose input file is unknown, another account's, deleted or not a batch input, and makes one over its account's batch file", async () => {
      const store = await open();
      await store.commit({
        commands: [
          createFile(fileIdOf(1)),
          createFile(fileIdOf(2), { account: 2 }),
          createFile(fileIdOf(3), { purpose: 'batch_output' }),
          createFile(fileIdOf(4)),
          fileCommand(fileIdOf(4), { type: 'DeleteFile', accountId: accountId(1), now: 150 }),
        ],
      });
      const refusals = await store.commit({
        commands: [
          createBatch(batchIdOf(1), fileIdOf(9)),
          createBatch(batchIdOf(2), fileIdOf(2)),
          createBatch(batchIdOf(3), fileIdOf(3)),
          createBatch(batchIdOf(4), fileIdOf(4)),
        ],
      });
      for (const outcome of refusals) expect(outcome).toBeInstanceOf(Refused);
      expect((refusals[2] as Refused).message).toMatch(/purpose batch_output/);
      for (const n of [1, 2, 3, 4]) expect(await store.reads.batch(batchIdOf(n))).toBeUndefined();
      // A file deleted earlier in the same write is not taken either.
      const sameWrite = await store.commit({
        commands: [
          fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(1), now: 190 }),
          createBatch(batchIdOf(5), fileIdOf(1)),
        ],
      });
      expect(sameWrite[1]).toBeInstanceOf(Refused);
      await commitOne(store, createFile(fileIdOf(6)));
      expect(typesOf(await commitOne(store, createBatch(batchIdOf(6), fileIdOf(6))))).toEqual(['BatchCreated']);
      expect(await store.reads.batch(batchIdOf(6))).toEqual({
        state: {
          status: 'validating',
          context: {
            batchId: batchIdOf(6),
            accountId: accountId(1),
            keyId: 'key_1',
            endpoint: '/v1/chat/completions',
            inputFileId: fileIdOf(6),
            completionWindow: '24h',
            createdAt: 200,
            expiresAt: 200 + 86_400_000,
          },
        },
        counts: {
          queued: 0,
          completed: 0,
          failed: 0,
          inputTokens: 0,
          outputTokens: 0,
          answerChars: 0,
          keptAnswerChars: 0,
        },
      });
      // A batch id is made once.
      expect(await commitOne(store, createBatch(batchIdOf(6), fileIdOf(6)))).toBeInstanceOf(Refused);
    });

    it('takes a batch through validation to in progress, and queues its lines only while it is in progress', async () => {
      const store = await open();
      const batchId = batchIdOf(1);
      await store.commit({ commands: [createAccount(1), createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1))] });
      // Not started yet: no line is taken.
      expect(await commitOne(store, lineSubmit(batchId, 1))).toBeInstanceOf(Refused);
      // Only the runner holding the batch's lease starts it.
      expect(await commitOne(store, start(batchId, 3))).toBeInstanceOf(Refused);
      expect(typesOf(await commitOne(store, take(batchId)))).toEqual(['BatchTaken']);
      expect(typesOf(await commitOne(store, start(batchId, 3)))).toEqual(['BatchStarted']);
      expect((await store.reads.batch(batchId))?.state).toMatchObject({
        status: 'in_progress',
        context: { owner: runner, total: 3, model: 'echo', inProgressAt: 400 },
      });
      expect(typesOf(await commitOne(store, lineSubmit(batchId, 1)))).toEqual(['RequestQueued']);
      expect(await store.reads.request(lineRequestId(batchId, 1))).toMatchObject({
        status: 'waiting',
        context: { batchId, customId: 'line-1', accountId: accountId(1) },
      });
      // Queued again after a crash: the same id is refused, no line is queued twice.
      expect(isRefusal(await commitOne(store, lineSubmit(batchId, 1)))).toBe(true);
      // A line of a batch that does not exist is refused.
      expect(await commitOne(store, lineSubmit(batchIdOf(9), 1))).toBeInstanceOf(Refused);
      // Cancelled by another account: as if unknown. By its own: it takes no more lines, in the same write already.
      const foreignCancel = await commitOne(
        store,
        batchCommand(batchId, { type: 'CancelBatch', accountId: accountId(2), now: 1_500 }),
      );
      expect(foreignCancel).toBeInstanceOf(Refused);
      const cancelled = await store.commit({
        commands: [
          lineSubmit(batchId, 2),
          batchCommand(batchId, { type: 'CancelBatch', accountId: accountId(1), now: 1_500 }),
          lineSubmit(batchId, 3),
        ],
      });
      expect(typesOf(cancelled[0])).toEqual(['RequestQueued']);
      expect(typesOf(cancelled[1])).toEqual(['BatchCancelRequested']);
      expect(cancelled[2]).toBeInstanceOf(Refused);
      expect(await store.reads.request(lineRequestId(batchId, 3))).toBeUndefined();
      expect(await store.reads.batch(batchId)).toMatchObject({
        state: { status: 'cancelling' },
        counts: { queued: 2, completed: 0, failed: 0 },
      });
    });

    it("counts a batch's lines exactly as they complete, fail, are cancelled and expire, and finalizes it only once every queued line has ended", async () => {
      const store = await open();
      const queue = queueOf(store);
      const { batchId, lineIds } = await batchInProgress(store, 1, 6);
      const [one, two, three, four, five, six] = lineIds as [string, string, string, string, string, string];
      expect(await store.reads.batch(batchId)).toMatchObject({ counts: { queued: 6, completed: 0, failed: 0 } });
      // Two lines run; one completes with its tokens, one fails for good (its last attempt).
      const first = await claimOne(queue, 'A', 2_000, { max: 1 });
      const second = await claimOne(queue, 'A', 2_000, { max: 1 });
      expect([first.reqId, second.reqId]).toEqual([one, two]);
      expect(await queue.recordSuccess(first, answer('done'), 2_100)).toBe('recorded');
      expect(await queue.recordFailure(second, 'upstream 400', { ...policy, maxAttempts: 1 }, 2_100)).toBe('recorded');
      expect(await statusOf(store, two)).toBe('failed');
      // One is cancelled while it waits, one expires unfinished.
      await store.commit({
        commands: [
          { type: 'Cancel', reqId: three, now: 2_200 },
          { type: 'Expire', reqId: four, now: 1_004 + 60_000 },
        ],
      });
      expect(await store.reads.batch(batchId)).toMatchObject({
        counts: { queued: 6, completed: 1, failed: 3, inputTokens: 3, outputTokens: 5 },
      });
      // Two lines still to end: finalizing is refused, and the batch stays open.
      const finalize = (now: number) => batchCommand(batchId, { type: 'FinalizeBatch', owner: runner, now });
      expect(await commitOne(store, finalize(2_300))).toBeInstanceOf(Refused);
      expect(await store.reads.openBatches(10)).toEqual([{ batchId, accountId: accountId(1) }]);
      // The last two complete in one write (each counted once, with its tokens).
      const fifth = await claimOne(queue, 'A', 2_400, { max: 1 });
      const sixth = await claimOne(queue, 'A', 2_400, { max: 1 });
      expect([fifth.reqId, sixth.reqId]).toEqual([five, six]);
      const record = (held: typeof fifth, text: string): Command => ({
        type: 'RecordSuccess',
        reqId: held.reqId,
        responseChars: text.length,
        response: text,
        inputTokens: 10,
        outputTokens: 20,
        owner: held.owner,
        attempt: held.attempt,
        now: 2_500,
      });
      await store.commit({ commands: [record(fifth, 'five'), record(sixth, 'six')] });
      expect((await store.reads.batch(batchId))?.counts).toEqual({
        queued: 6,
        completed: 3,
        failed: 3,
        inputTokens: 23,
        outputTokens: 45,
        answerChars: 'done'.length + 'five'.length + 'six'.length,
        keptAnswerChars: 'done'.length + 'five'.length + 'six'.length,
      });
      // A completed line that expires later changes none of its batch's lines' counts: only its answer is kept no more.
      await commitOne(store, { type: 'Expire', reqId: one, now: 1_001 + 60_000 });
      expect((await store.reads.batch(batchId))?.counts).toMatchObject({
        completed: 3,
        failed: 3,
        answerChars: 11,
        keptAnswerChars: 7,
      });
      // Every line ended: it finalizes, then ends, and is open no more.
      expect(typesOf(await commitOne(store, finalize(2_600)))).toEqual(['BatchFinalizing']);
      expect(await store.reads.openBatches(10)).toEqual([{ batchId, accountId: accountId(1) }]);
      const end = batchCommand(batchId, {
        type: 'EndBatch',
        owner: runner,
        outputFile: { fileId: fileIdOf(7), filename: 'out.jsonl', bytes: 10, sha256: 'a'.repeat(64) },
        errorFile: { fileId: fileIdOf(8), filename: 'err.jsonl', bytes: 20, sha256: 'b'.repeat(64) },
        completed: 3,
        failed: 3,
        now: 2_700,
      });
      // The output files come to exist in the same write as the batch's end, its account's.
      expect(typesOf(await commitOne(store, end))).toEqual(['FileCreated', 'FileCreated', 'BatchEnded']);
      expect(await store.reads.file(fileIdOf(8))).toMatchObject({ purpose: 'batch_output', bytes: 20 });
      expect(await store.reads.batch(batchId)).toMatchObject({
        state: { status: 'completed', context: { outputFileId: fileIdOf(7), completed: 3, failed: 3 } },
        counts: { queued: 6, completed: 3, failed: 3 },
      });
      expect(await store.reads.openBatches(10)).toEqual([]);
    });

    it('lists the open batches by account then id, up to the limit, until each ends', async () => {
      const store = await open();
      await store.commit({
        commands: [
          createFile(fileIdOf(1)),
          createFile(fileIdOf(2), { account: 2 }),
          createBatch(batchIdOf(3), fileIdOf(1)),
          createBatch(batchIdOf(1), fileIdOf(2), { account: 2 }),
          createBatch(batchIdOf(2), fileIdOf(1)),
        ],
      });
      expect(await store.reads.openBatches(10)).toEqual([
        { batchId: batchIdOf(2), accountId: accountId(1) },
        { batchId: batchIdOf(3), accountId: accountId(1) },
        { batchId: batchIdOf(1), accountId: accountId(2) },
      ]);
      expect(await store.reads.openBatches(2)).toHaveLength(2);
      // A batch whose file fails validation ends at once.
      await commitOne(store, take(batchIdOf(2)));
      const failed = await commitOne(
        store,
        batchCommand(batchIdOf(2), { type: 'FailValidation', owner: runner, errors: '[]', now: 500 }),
      );
      expect(typesOf(failed)).toEqual(['BatchValidationFailed']);
      expect((await store.reads.openBatches(10)).map((open) => open.batchId)).toEqual([batchIdOf(3), batchIdOf(1)]);
      expect((await store.reads.batch(batchIdOf(2)))?.state.status).toBe('failed');
    });

    it("lists an account's batches a page at a time, oldest or newest first, from a given one", async () => {
      const store = await open();
      // Made at 200, 300, 300 (ids break the tie), 400; another account's between them.
      await store.commit({
        commands: [
          createFile(fileIdOf(1)),
          createFile(fileIdOf(2), { account: 2 }),
          createBatch(batchIdOf(4), fileIdOf(1), { now: 200 }),
          createBatch(batchIdOf(3), fileIdOf(1), { now: 300 }),
          createBatch(batchIdOf(9), fileIdOf(2), { account: 2, now: 300 }),
          createBatch(batchIdOf(2), fileIdOf(1), { now: 300 }),
          createBatch(batchIdOf(1), fileIdOf(1), { now: 400 }),
        ],
      });
      const list = (page: Parameters<StoreShape['reads']['listOf']>[2]) =>
        store.reads.listOf('accountBatches', accountId(1), page);
      const oldestFirst = [batchIdOf(4), batchIdOf(2), batchIdOf(3), batchIdOf(1)];
      expect(await list({ order: 'asc', limit: 10 })).toEqual(oldestFirst);
      expect(await list({ order: 'desc', limit: 10 })).toEqual([...oldestFirst].reverse());
      expect(await list({ order: 'desc', limit: 2 })).toEqual([batchIdOf(1), batchIdOf(3)]);
      expect(await list({ order: 'desc', limit: 2, from: { createdAt: 300, id: batchIdOf(3) } })).toEqual([
        batchIdOf(2),
        batchIdOf(4),
      ]);
      expect(await list({ order: 'asc', limit: 2, from: { createdAt: 300, id: batchIdOf(2) } })).toEqual([
        batchIdOf(3),
        batchIdOf(1),
      ]);
      expect(await list({ order: 'asc', limit: 10, from: { createdAt: 400, id: batchIdOf(1) } })).toEqual([]);
      expect(await list({ order: 'desc', limit: 0 })).toEqual([]);
      expect(await store.reads.listOf('accountBatches', accountId(2), { order: 'asc', limit: 10 })).toEqual([
        batchIdOf(9),
      ]);
      expect(await store.reads.listOf('accountBatches', accountId(3), { order: 'desc', limit: 10 })).toEqual([]);
      // Files are listed the same way.
      expect(await store.reads.listOf('accountFiles', accountId(1), { order: 'desc', limit: 10 })).toEqual([
        fileIdOf(1),
      ]);
    });

    it("keeps a batch's waiting lines in their account's batch lane: once lines hold their share of the model, an interactive request of the model is claimed before them", async () => {
      const store = await open();
      const { lineIds } = await batchInProgress(store, 1, 3);
      const share = { modelLimits: { echo: 2 }, batchShare: 0.5 };
      const claim = (now: number, more: Record<string, unknown> = {}) =>
        store.commit({ commands: [{ type: 'Claim', ...ask('A', now, { max: 1, ...share }), ...more } as Command] });
      const started = (outcomes: Awaited<ReturnType<typeof claim>>) =>
        eventsOf(outcomes[0]).flatMap((event) => (event.type === 'RequestProcessingStarted' ? [event.reqId] : []));
      // Nothing else is due: lines take the workers.
      expect(started(await claim(2_000))).toEqual([lineIds[0]]);
      // An interactive request of the same account and model, queued after the lines. The claim starts its turn at
      // the batch lane (after the account's own), yet the line waits: batches hold their share (1 of the model's 2).
      await commitOne(store, submit('req_interactive', { now: 2_100 }));
      expect(started(await claim(2_200, { after: accountId(1) }))).toEqual(['req_interactive']);
      expect(await statusOf(store, lineIds[1] as string)).toBe('waiting');
      // Both of the model's workers are taken now: nothing more starts.
      expect(started(await claim(2_300))).toEqual([]);
    });

    it('gives a waiting line a worker nothing else could take, whatever the share', async () => {
      const store = await open();
      const { lineIds } = await batchInProgress(store, 1, 3);
      const claim = (now: number) =>
        store.commit({
          commands: [
            { type: 'Claim', ...ask('A', now, { max: 2, modelLimits: { echo: 4 } }), batchShare: 0.25 } as Command,
          ],
        });
      // Batches' share of 4 workers is 1, but no interactive work is due: the lines take both places.
      const outcomes = await claim(2_000);
      expect(
        eventsOf(outcomes[0]).flatMap((event) => (event.type === 'RequestProcessingStarted' ? [event.reqId] : [])),
      ).toEqual(lineIds.slice(0, 2));
    });
  });
