import { describe, expect, it } from 'vitest';
import { openBatchesCounter, storedBytesCounter } from '../../../src/domain/accountCounters.js';
import type { Command } from '../../../src/domain/commands.js';
import { AccountLimitReached } from '../../../src/domain/errors.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  batchCommand,
  batchIdOf,
  batchRunner,
  commitOne,
  createBatch,
  createFile,
  eventsOf,
  fileCommand,
  fileIdOf,
  oneToN,
  takeBatch,
} from '../fixtures.js';

/** Bytes of every file `createFile` makes. */
const fileBytes = 1_234;

/** A create of batch `n` of acct_<account> (default 1) over `file` (default file 1), bounded by `maxInProgress`. */
const boundedBatch = (n: number, maxInProgress: number, { account = 1, file = fileIdOf(1) } = {}): Command => {
  const command = createBatch(batchIdOf(n), file, { account }) as Extract<Command, { type: 'Batch' }>;
  return { ...command, command: { ...command.command, maxInProgress } as typeof command.command };
};

/** An upload's file `n` of acct_<account> (default 1), of `createFile`'s size, bounded by `maxStoredBytes`. */
const boundedFile = (n: number, maxStoredBytes: number, account = 1): Command => {
  const command = createFile(fileIdOf(n), { account }) as Extract<Command, { type: 'File' }>;
  return { ...command, command: { ...command.command, maxStoredBytes } as typeof command.command };
};

const made = (outcomes: readonly unknown[]) => outcomes.filter((outcome) => eventsOf(outcome as never).length > 0);
const refused = (outcomes: readonly unknown[]) => outcomes.filter((outcome) => outcome instanceof AccountLimitReached);

const counts = async (store: StoreShape, account = 1) => ({
  openBatches: await store.reads.accountCount(openBatchesCounter(accountId(account))),
  storedBytes: await store.reads.accountCount(storedBytesCounter(accountId(account))),
});

/** Ends a batch made by `boundedBatch` or `createBatch` (its file fails validation): it is open no more. */
const endBatch = async (store: StoreShape, n: number) => {
  await commitOne(store, takeBatch(batchIdOf(n)));
  const ended = await commitOne(
    store,
    batchCommand(batchIdOf(n), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 500 }),
  );
  expect(eventsOf(ended).map((event) => event.type)).toEqual(['BatchValidationFailed']);
};

/**
 * Contract 16, "Accounts and limits": a plan's bound of batches not ended (`maxBatchesInProgress`) and of bytes of
 * files kept (`maxFileStorageBytes`) are decided inside the store's write, against per-account counters changed in
 * the same write as the batch and file events: exact whoever else writes at once (one batch of commands, two handles,
 * another process), freed as batches end and files are deleted, and kept across a reopen. A batch's own output files
 * count, and are never refused.
 */
export const accountLimitFeatures = ({ open, pair, itWith, factory }: Contract) =>
  describe("an account's bounds of open batches and stored bytes", () => {
    it('leaves exactly the bound of batches open of creates sent at once, in one batch of commands and in several', async () => {
      const [first, second] = await pair();
      await first.commit({ commands: [createFile(fileIdOf(1)), createFile(fileIdOf(1_002), { account: 2 })] });
      // One batch of commands: each create sees the ones before it.
      const inOne = await first.commit({ commands: oneToN(5).map((n) => boundedBatch(n, 3)) });
      expect(made(inOne)).toHaveLength(3);
      expect(refused(inOne)).toHaveLength(2);
      expect(refused(inOne)[0]).toMatchObject({ budget: 'batches', limit: 3, count: 3 });
      expect((refused(inOne)[0] as AccountLimitReached).message).toMatch(/maxBatchesInProgress/);
      // Creates sent at once, one per batch of commands, through two handles where the store has them: none more.
      const atOnce = await Promise.all(
        oneToN(8).map((i) => commitOne(i % 2 === 0 ? first : second, boundedBatch(10 + i, 5))),
      );
      expect(made(atOnce)).toHaveLength(2);
      expect(refused(atOnce)).toHaveLength(6);
      expect(await counts(first)).toMatchObject({ openBatches: 5 });
      expect((await first.reads.openBatches(100)).filter((b) => b.accountId === accountId(1))).toHaveLength(5);
      // Another account's bound is its own.
      expect(made([await commitOne(second, boundedBatch(40, 1, { account: 2, file: fileIdOf(1_002) }))])).toHaveLength(
        1,
      );
      expect(
        refused([await commitOne(first, boundedBatch(41, 1, { account: 2, file: fileIdOf(1_002) }))]),
      ).toHaveLength(1);
      expect(await counts(second, 2)).toMatchObject({ openBatches: 1 });
    });

    itWith(
      factory.anotherProcess,
      'leaves exactly the bound of batches open when this process and another create at once',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        await commitOne(store, createFile(fileIdOf(1)));
        const outcomes = await Promise.all(
          oneToN(10).map((i) =>
            i % 2 === 0
              ? commitOne(store, boundedBatch(i, 4))
              : other.commit({ commands: [boundedBatch(i, 4)] }).then(([outcome]) => outcome),
          ),
        );
        expect(made(outcomes)).toHaveLength(4);
        expect(refused(outcomes)).toHaveLength(6);
        expect(await counts(store)).toMatchObject({ openBatches: 4 });
      },
    );

    it('keeps no more bytes than the bound of uploads made at once, and never refuses a batch its output files', async () => {
      const [first, second] = await pair();
      // Room for three files and a bit.
      const bound = 3 * fileBytes + 100;
      const inOne = await first.commit({ commands: oneToN(2).map((n) => boundedFile(n, bound)) });
      expect(made(inOne)).toHaveLength(2);
      const atOnce = await Promise.all(
        oneToN(8).map((i) => commitOne(i % 2 === 0 ? first : second, boundedFile(10 + i, bound))),
      );
      expect(made(atOnce)).toHaveLength(1);
      expect(refused(atOnce)).toHaveLength(7);
      expect(refused(atOnce)[0]).toMatchObject({ budget: 'file_storage', limit: bound, count: 3 * fileBytes });
      expect((refused(atOnce)[0] as AccountLimitReached).message).toMatch(/maxFileStorageBytes/);
      expect(await counts(second)).toMatchObject({ storedBytes: 3 * fileBytes });
      expect(await first.reads.listOf('accountFiles', accountId(1), { order: 'asc', limit: 20 })).toHaveLength(3);
      // An unbounded file (the store's own) and a batch's output files count, and are made whatever the bound.
      await commitOne(first, createBatch(batchIdOf(1), fileIdOf(1)));
      await commitOne(first, takeBatch(batchIdOf(1)));
      await commitOne(
        first,
        batchCommand(batchIdOf(1), { type: 'StartBatch', owner: batchRunner, total: 0, model: 'echo', now: 400 }),
      );
      await commitOne(first, batchCommand(batchIdOf(1), { type: 'FinalizeBatch', owner: batchRunner, now: 450 }));
      const end = await commitOne(
        first,
        batchCommand(batchIdOf(1), {
          type: 'EndBatch',
          owner: batchRunner,
          outputFile: { fileId: fileIdOf(90), filename: 'out.jsonl', bytes: 5_000, sha256: 'a'.repeat(64) },
          completed: 0,
          failed: 0,
          now: 500,
        }),
      );
      expect(eventsOf(end).map((event) => event.type)).toEqual(['FileCreated', 'BatchEnded']);
      expect(await counts(first)).toEqual({ openBatches: 0, storedBytes: 3 * fileBytes + 5_000 });
      // Beyond the bound now: an upload, even of nothing more, is refused.
      expect(refused([await commitOne(second, boundedFile(30, bound))])).toHaveLength(1);
    });

    it('frees room as files are deleted and as batches end', async () => {
      const store = await open();
      await store.commit({ commands: [boundedFile(1, 2 * fileBytes), boundedFile(2, 2 * fileBytes)] });
      expect(refused([await commitOne(store, boundedFile(3, 2 * fileBytes))])).toHaveLength(1);
      await commitOne(store, fileCommand(fileIdOf(2), { type: 'DeleteFile', accountId: accountId(1), now: 150 }));
      expect(await counts(store)).toMatchObject({ storedBytes: fileBytes });
      // Deleted and made again in one batch of commands: the room the deletion freed is taken.
      const again = await store.commit({
        commands: [
          boundedFile(3, 2 * fileBytes),
          fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(1), now: 160 }),
          boundedFile(4, 2 * fileBytes),
          boundedFile(5, 2 * fileBytes),
        ],
      });
      expect(made(again)).toHaveLength(3);
      expect(refused(again)).toHaveLength(1);
      expect(await counts(store)).toMatchObject({ storedBytes: 2 * fileBytes });

      const input = { file: fileIdOf(3) };
      // Batches (over file 3): at the bound, one ends (validation failed), and the next is made; so after a cancelled one ends.
      await store.commit({ commands: [boundedBatch(1, 2, input), boundedBatch(2, 2, input)] });
      expect(refused([await commitOne(store, boundedBatch(3, 2, input))])).toHaveLength(1);
      await endBatch(store, 1);
      expect(await counts(store)).toMatchObject({ openBatches: 1 });
      // Ended and made in one batch of commands.
      await commitOne(store, takeBatch(batchIdOf(2)));
      const endAndCreate = await store.commit({
        commands: [
          boundedBatch(4, 2, input),
          batchCommand(batchIdOf(2), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 600 }),
          boundedBatch(5, 2, input),
          boundedBatch(6, 2, input),
        ],
      });
      expect(made(endAndCreate)).toHaveLength(3);
      expect(refused(endAndCreate)).toHaveLength(1);
      expect(await counts(store)).toMatchObject({ openBatches: 2 });
      // A batch being cancelled is still open until it ends.
      await commitOne(store, batchCommand(batchIdOf(4), { type: 'CancelBatch', accountId: accountId(1), now: 700 }));
      expect(await counts(store)).toMatchObject({ openBatches: 2 });
    });

    itWith(factory.reopen, 'keeps the counts and their bounds across a reopen', async (reopen) => {
      const store = await open();
      await store.commit({
        commands: [boundedFile(1, 3 * fileBytes), boundedFile(2, 3 * fileBytes), boundedBatch(1, 2)],
      });
      await endBatch(store, 1);
      await store.commit({ commands: [boundedBatch(2, 2), boundedBatch(3, 2)] });
      const reopened = await reopen(store);
      expect(await counts(reopened)).toEqual({ openBatches: 2, storedBytes: 2 * fileBytes });
      expect(refused([await commitOne(reopened, boundedBatch(4, 2))])).toHaveLength(1);
      expect(made([await commitOne(reopened, boundedFile(3, 3 * fileBytes))])).toHaveLength(1);
      expect(refused([await commitOne(reopened, boundedFile(4, 3 * fileBytes))])).toHaveLength(1);
    });
  });
