import { describe, expect, it } from 'vitest';
import { openBatchesCounter } from '../../../src/domain/accountCounters.js';
import type { BatchCommand } from '../../../src/domain/batch/decider.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { Refused } from '../../../src/domain/errors.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  batchCommand,
  batchIdOf,
  batchRunner,
  commitOne,
  createAccount,
  createBatch,
  createFile,
  eventsOf,
  fileIdOf,
  lineSubmit,
  startBatch,
  takeBatch,
} from '../fixtures.js';

const typesOf = (outcome: Awaited<ReturnType<typeof commitOne>>) => eventsOf(outcome).map((event) => event.type);

const failure = (batchId: string, now: number, owner = batchRunner): Command =>
  batchCommand(batchId, { type: 'RecordWorkFailure', owner, reason: `TypeError: try at ${now}`, now });

const on = (batchId: string, command: BatchCommand) => batchCommand(batchId, command);

/** A batch of acct_1 (with one webhook endpoint) validated and in progress, its `lines` lines queued. */
const inProgress = async (store: StoreShape, n: number, lines: number) => {
  const batchId = batchIdOf(n);
  await store.commit({ commands: [createFile(fileIdOf(n)), createBatch(batchId, fileIdOf(n)), takeBatch(batchId)] });
  await commitOne(store, startBatch(batchId, lines));
  await store.commit({ commands: Array.from({ length: lines }, (_, i) => lineSubmit(batchId, i + 1)) });
  return batchId;
};

/** An endpoint of acct_1 that takes every event: a batch's ending is posted to it (the outbox, in the same write). */
const endpoint: Command = {
  type: 'WebhookEndpoint',
  endpointId: 'whep_EEEEEEEEEEEEEEE1',
  command: {
    type: 'AddEndpoint',
    accountId: accountId(1),
    url: 'https://hooks.example.com/1',
    events: [],
    secretId: 'sec_1',
    secret: 'whsec_secret1',
    plans: defaultPlans,
    allowHttp: false,
    now: 10,
  },
};

/**
 * Issue 40: a batch's housekeeping that fails is counted in the store's write (BatchWorkFailed), the same for every
 * process and node, and the batch machine ends it after three failures of one step; the operator ends a finalizing
 * batch cancelled (BatchFinalizingCancelled), after which its finalize's end is refused. Each store folds the new
 * events into the batch's view, its open index, its account's count of open batches and the webhook outbox alike.
 */
export const batchFailureFeatures = ({ open }: Contract) =>
  describe('batches whose housekeeping fails, and the operator’s cancel of a finalizing batch', () => {
    it('counts failures from the lease holder only, and fails a validating batch at the third, closing it and posting batch.failed', async () => {
      const store = await open();
      const batchId = batchIdOf(1);
      await store.commit({
        commands: [createAccount(1), endpoint, createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1))],
      });
      await commitOne(store, takeBatch(batchId));
      expect(await store.reads.accountCount(openBatchesCounter(accountId(1)))).toBe(1);
      expect(await commitOne(store, failure(batchId, 500, 'runner_b'))).toBeInstanceOf(Refused);
      expect(typesOf(await commitOne(store, failure(batchId, 501)))).toEqual(['BatchWorkFailed']);
      // Two in one write: each decided on what the one before left.
      const [second, third] = await store.commit({ commands: [failure(batchId, 502), failure(batchId, 503)] });
      expect(typesOf(second)).toEqual(['BatchWorkFailed']);
      expect(typesOf(third)).toEqual(['BatchWorkFailed', 'WebhookDeliveryDue']);
      expect(eventsOf(third)[1]).toMatchObject({ eventType: 'batch.failed', dataId: batchId });
      const view = await store.reads.batch(batchId);
      expect(view?.state).toMatchObject({
        status: 'failed',
        context: { failedStep: 'validating', stepFailures: 3, failedAt: 503 },
      });
      expect(JSON.parse(view?.state.context.errors ?? '[]')).toEqual([
        {
          code: 'batch_failed',
          line: null,
          message: 'validating its input file failed 3 times; the last time: TypeError: try at 503',
          param: null,
        },
      ]);
      expect(await store.reads.openBatches(10)).toEqual([]);
      expect(await store.reads.accountCount(openBatchesCounter(accountId(1)))).toBe(0);
      expect(await commitOne(store, failure(batchId, 504))).toBeInstanceOf(Refused);
    });

    it('makes an in-progress batch failing, which finalizes once its queued lines ended and ends failed with its files', async () => {
      const store = await open();
      const batchId = await inProgress(store, 2, 2);
      for (const now of [600, 601, 602]) await commitOne(store, failure(batchId, now));
      expect((await store.reads.batch(batchId))?.state.status).toBe('failing');
      // Its waiting lines cancelled (what the runner does), it finalizes and ends failed, its files made in the write.
      await store.commit({
        commands: [1, 2].map((line): Command => ({ type: 'Cancel', reqId: lineRequestId(batchId, line), now: 610 })),
      });
      expect(
        typesOf(await commitOne(store, on(batchId, { type: 'FinalizeBatch', owner: batchRunner, now: 620 }))),
      ).toEqual(['BatchFinalizing']);
      const errorFile = { fileId: fileIdOf(9), filename: 'err.jsonl', bytes: 20, sha256: 'b'.repeat(64) };
      const end = on(batchId, { type: 'EndBatch', owner: batchRunner, errorFile, completed: 0, failed: 2, now: 630 });
      expect(typesOf(await commitOne(store, end))).toEqual(['FileCreated', 'BatchEnded']);
      expect((await store.reads.batch(batchId))?.state).toMatchObject({
        status: 'failed',
        context: { errorFileId: fileIdOf(9), failedAt: 630, completed: 0, failed: 2, ending: 'failed' },
      });
      expect(await store.reads.openBatches(10)).toEqual([]);
    });

    it('ends a finalizing batch cancelled at the operator’s word, refuses its finalize’s end, and fails one whose files cannot be written', async () => {
      const store = await open();
      const cancelled = await inProgress(store, 3, 1);
      const stuck = await inProgress(store, 4, 1);
      const done = (batchId: string): Command => ({
        type: 'Cancel',
        reqId: lineRequestId(batchId, 1),
        now: 700,
      });
      await store.commit({ commands: [done(cancelled), done(stuck)] });
      // Every line ended (cancelled): both finalize.
      await store.commit({
        commands: [cancelled, stuck].map((batchId) =>
          on(batchId, { type: 'FinalizeBatch', owner: batchRunner, now: 710 }),
        ),
      });
      expect(typesOf(await commitOne(store, on(cancelled, { type: 'CancelFinalizing', now: 720 })))).toEqual([
        'BatchFinalizingCancelled',
      ]);
      expect(
        await commitOne(
          store,
          on(cancelled, { type: 'EndBatch', owner: batchRunner, completed: 0, failed: 1, now: 730 }),
        ),
      ).toBeInstanceOf(Refused);
      expect((await store.reads.batch(cancelled))?.state).toMatchObject({
        status: 'cancelled',
        context: { ending: 'cancelled', endedAt: 720 },
      });
      for (const now of [740, 741, 742]) await commitOne(store, failure(stuck, now));
      expect((await store.reads.batch(stuck))?.state).toMatchObject({
        status: 'failed',
        context: { failedStep: 'finalizing', failedAt: 742 },
      });
      expect(await store.reads.openBatches(10)).toEqual([]);
    });

    it("reads many requests' states at once, without their text, in the order asked", async () => {
      const store = await open();
      const batchId = await inProgress(store, 5, 2);
      const ids = [lineRequestId(batchId, 2), 'req_missing', lineRequestId(batchId, 1)];
      const states = await store.reads.requests(ids);
      expect(states.map((state) => state?.context.reqId)).toEqual([ids[0], undefined, ids[2]]);
      expect(states.map((state) => state?.status)).toEqual(['waiting', undefined, 'waiting']);
      expect(await store.reads.requests([])).toEqual([]);
    });
  });
