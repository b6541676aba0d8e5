import { describe, expect, it } from 'vitest';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  batchCommand,
  batchIdOf,
  commitOne,
  createBatch,
  createFile,
  eventsOf,
  fileCommand,
  fileIdOf,
  batchRunner as runner,
  takeBatch as take,
} from '../fixtures.js';

/** Ends a batch at once: taken, then its validation failed. */
const end = async (store: StoreShape, batchId: string) => {
  await commitOne(store, take(batchId));
  const failed = await commitOne(
    store,
    batchCommand(batchId, { type: 'FailValidation', owner: runner, errors: '[]', now: 500 }),
  );
  expect(eventsOf(failed).map((event) => event.type)).toEqual(['BatchValidationFailed']);
};

/**
 * Issue 40: the open batches as each server's batch runner reads them, accounts in turn and a bounded number at a
 * time (app/batches/openBatchTurns.ts), and the files they read (whether a file's bytes may go), kept in the same
 * write as the batches' changes.
 */
export const openBatchFeatures = ({ open }: Contract) =>
  describe('open batches by account and by input file', () => {
    /** acct_1: batches 1, 2, 3 (2 ended); acct_2: none open (4 ended); acct_3: 5; acct_5: 6, 7. */
    const openBatchesOfFourAccounts = async () => {
      const store = await open();
      await store.commit({
        commands: [
          ...[1, 2, 3, 5].map((account) => createFile(fileIdOf(account), { account })),
          createBatch(batchIdOf(3), fileIdOf(1)),
          createBatch(batchIdOf(1), fileIdOf(1)),
          createBatch(batchIdOf(2), fileIdOf(1)),
          createBatch(batchIdOf(4), fileIdOf(2), { account: 2 }),
          createBatch(batchIdOf(5), fileIdOf(3), { account: 3 }),
          createBatch(batchIdOf(7), fileIdOf(5), { account: 5 }),
          createBatch(batchIdOf(6), fileIdOf(5), { account: 5 }),
        ],
      });
      await end(store, batchIdOf(2));
      await end(store, batchIdOf(4));
      return store;
    };

    it('takes the accounts with open batches in turn, after any account and wrapping round to it, up to the limit', async () => {
      const store = await openBatchesOfFourAccounts();
      const [one, three, five] = [accountId(1), accountId(3), accountId(5)];
      expect(await store.reads.openBatchAccounts(undefined, 10)).toEqual([one, three, five]);
      expect(await store.reads.openBatchAccounts(one, 10)).toEqual([three, five, one]);
      expect(await store.reads.openBatchAccounts(three, 2)).toEqual([five, one]);
      expect(await store.reads.openBatchAccounts(five, 10)).toEqual([one, three, five]);
      // An account with no open batch (all ended, or none ever) is a place in the turn like any other.
      expect(await store.reads.openBatchAccounts(accountId(2), 10)).toEqual([three, five, one]);
      expect(await store.reads.openBatchAccounts(accountId(4), 10)).toEqual([five, one, three]);
      expect(await store.reads.openBatchAccounts('acct_0', 10)).toEqual([one, three, five]);
      expect(await store.reads.openBatchAccounts(one, 0)).toEqual([]);
      // The last of an account's batches ends: the account leaves the turn.
      await end(store, batchIdOf(5));
      expect(await store.reads.openBatchAccounts(one, 10)).toEqual([five, one]);
    });

    it("pages through an account's open batches in id order, from after any batch, leaving out those that ended", async () => {
      const store = await openBatchesOfFourAccounts();
      expect(await store.reads.openBatchesOf(accountId(1), undefined, 10)).toEqual([batchIdOf(1), batchIdOf(3)]);
      expect(await store.reads.openBatchesOf(accountId(1), undefined, 1)).toEqual([batchIdOf(1)]);
      expect(await store.reads.openBatchesOf(accountId(1), batchIdOf(1), 10)).toEqual([batchIdOf(3)]);
      // From after a batch that ended, or one that never was: the next one after it.
      expect(await store.reads.openBatchesOf(accountId(1), batchIdOf(2), 10)).toEqual([batchIdOf(3)]);
      expect(await store.reads.openBatchesOf(accountId(1), batchIdOf(3), 10)).toEqual([]);
      expect(await store.reads.openBatchesOf(accountId(5), undefined, 10)).toEqual([batchIdOf(6), batchIdOf(7)]);
      expect(await store.reads.openBatchesOf(accountId(2), undefined, 10)).toEqual([]);
      expect(await store.reads.openBatchesOf(accountId(5), undefined, 0)).toEqual([]);
      // The plain list is by account, then id.
      expect(await store.reads.openBatches(10)).toEqual([
        { batchId: batchIdOf(1), accountId: accountId(1) },
        { batchId: batchIdOf(3), accountId: accountId(1) },
        { batchId: batchIdOf(5), accountId: accountId(3) },
        { batchId: batchIdOf(6), accountId: accountId(5) },
        { batchId: batchIdOf(7), accountId: accountId(5) },
      ]);
    });

    it('tells that an open batch reads a file, even once the file is deleted, until the last batch reading it ends', async () => {
      const store = await openBatchesOfFourAccounts();
      // file 1: batches 1 and 3 open; file 2: its batch ended; file 9: never read.
      expect(await store.reads.isOpenBatchInput(fileIdOf(1))).toBe(true);
      expect(await store.reads.isOpenBatchInput(fileIdOf(2))).toBe(false);
      expect(await store.reads.isOpenBatchInput(fileIdOf(9))).toBe(false);
      // A file id that another one begins with is another file.
      expect(await store.reads.isOpenBatchInput(fileIdOf(1).slice(0, -1))).toBe(false);
      const deleted = await commitOne(
        store,
        fileCommand(fileIdOf(1), { type: 'DeleteFile', accountId: accountId(1), now: 600 }),
      );
      expect(eventsOf(deleted).map((event) => event.type)).toEqual(['FileDeleted']);
      expect(await store.reads.isOpenBatchInput(fileIdOf(1))).toBe(true);
      await end(store, batchIdOf(1));
      expect(await store.reads.isOpenBatchInput(fileIdOf(1))).toBe(true);
      await end(store, batchIdOf(3));
      expect(await store.reads.isOpenBatchInput(fileIdOf(1))).toBe(false);
    });
  });
