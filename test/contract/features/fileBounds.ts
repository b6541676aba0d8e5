import { describe, expect, it } from 'vitest';
import { storedBytesCounter, storedFilesCounter } from '../../../src/domain/accountCounters.js';
import type { Command } from '../../../src/domain/commands.js';
import { AccountLimitReached } from '../../../src/domain/errors.js';
import type { FileCommand } from '../../../src/domain/file/decider.js';
import { maxListRows, type StoreShape } from '../../../src/ports/Store.js';
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

/** The plan's bounds these tests give an upload, unless told. */
const bounds = { maxStoredBytes: 10_000, maxFiles: 100, maxConcurrentUploads: 3 };
/** How long a reservation holds in these tests. */
const heldMs = 60_000;

type Start = Extract<FileCommand, { type: 'StartUpload' }>;

/** Upload `n` of acct_<account> (default 1) starts at `now`, declaring `bytes` (or none: `shrinkToRoom`). */
const startUpload = (
  n: number,
  {
    account = 1,
    bytes = 1_000,
    declared = true,
    now = 1_000,
    ...more
  }: Partial<Start> & {
    account?: number;
    declared?: boolean;
  } = {},
): Command =>
  fileCommand(fileIdOf(n), {
    type: 'StartUpload',
    accountId: accountId(account),
    bytes,
    shrinkToRoom: !declared,
    now,
    heldUntil: now + heldMs,
    ...bounds,
    ...more,
  });

/** Upload `n`'s file made, of `bytes`, at `now` (an upload's CreateFile carries its bounds). */
const uploadedFile = (n: number, { account = 1, bytes = 1_000, now = 1_500, purpose = 'batch' } = {}): Command => {
  const command = createFile(fileIdOf(n), { account, now, purpose }) as Extract<Command, { type: 'File' }>;
  return {
    ...command,
    command: {
      ...command.command,
      bytes,
      maxStoredBytes: bounds.maxStoredBytes,
      maxFiles: bounds.maxFiles,
    } as FileCommand,
  };
};

const endUpload = (n: number, { account = 1, now = 2_000, lapsed = false } = {}): Command =>
  fileCommand(fileIdOf(n), { type: 'EndUpload', accountId: accountId(account), now, lapsed });

const typesOf = (outcome: unknown) => eventsOf(outcome as never).map((event) => event.type);
const made = (outcomes: readonly unknown[]) => outcomes.filter((outcome) => typesOf(outcome).length > 0);
const refusedFor = (outcomes: readonly unknown[], budget: AccountLimitReached['budget']) =>
  outcomes.filter((outcome) => outcome instanceof AccountLimitReached && outcome.budget === budget);
const reservedOf = (outcome: unknown) =>
  (eventsOf(outcome as never)[0] as unknown as { reservedBytes: number }).reservedBytes;

const counts = async (store: StoreShape, account = 1) => ({
  bytes: await store.reads.accountCount(storedBytesCounter(accountId(account))),
  files: await store.reads.accountCount(storedFilesCounter(accountId(account))),
});

/**
 * Issue 40: an account's files are bounded before their bytes. An upload holds a reservation, decided inside the
 * store's write against what the account keeps and the other reservations that still hold: room under its plan's
 * `maxFileStorageBytes`, a place under its `maxFiles` and among its `maxConcurrentUploads` uploads streaming; exact
 * whoever else writes at once. A reservation past its time counts no more, and is listed as lapsed until it is ended.
 * Files are counted per account, and listed by purpose from an index of their own; no list page is longer than
 * `maxListRows`.
 */
export const fileBoundFeatures = ({ open, pair, itWith, factory }: Contract) =>
  describe("an account's uploads and files, bounded in the store's write", () => {
    it('holds no more uploads streaming than maxConcurrentUploads, in one batch of commands and through two handles, and frees a place as each ends', async () => {
      const [first, second] = await pair();
      const inOne = await first.commit({ commands: oneToN(5).map((n) => startUpload(n)) });
      expect(made(inOne)).toHaveLength(3);
      const [refused] = refusedFor(inOne, 'concurrent_uploads');
      expect(refused).toMatchObject({ limit: 3, count: 3 });
      expect((refused as AccountLimitReached).message).toMatch(/maxConcurrentUploads/);
      expect(await second.reads.uploadsOf(accountId(1))).toHaveLength(3);
      // One fails and gives its place back; one is made into its file (the place goes with the reservation).
      expect(typesOf(await commitOne(second, endUpload(1)))).toEqual(['FileUploadEnded']);
      expect(typesOf(await commitOne(first, uploadedFile(2)))).toEqual(['FileCreated', 'FileUploadEnded']);
      const atOnce = await Promise.all(
        oneToN(6).map((i) => commitOne(i % 2 === 0 ? first : second, startUpload(10 + i, { now: 1_100 }))),
      );
      expect(made(atOnce)).toHaveLength(2);
      expect(refusedFor(atOnce, 'concurrent_uploads')).toHaveLength(4);
      expect(await first.reads.uploadsOf(accountId(1))).toHaveLength(3);
      // Another account's places are its own.
      expect(made([await commitOne(second, startUpload(30, { account: 2 }))])).toHaveLength(1);
    });

    it('holds room for what each upload declares, and gives one of no declared size the room left, never more than maxFileStorageBytes in all', async () => {
      const [first, second] = await pair();
      await first.commit({ commands: [uploadedFile(1, { bytes: 4_000 })] });
      expect(await counts(first)).toEqual({ bytes: 4_000, files: 1 });
      // 6,000 left: 5,000 declared is held whole; 2,000 more is not (1,000 left), and is refused before any byte.
      expect(reservedOf(await commitOne(first, startUpload(2, { bytes: 5_000 })))).toBe(5_000);
      const tooBig = await commitOne(second, startUpload(3, { bytes: 2_000 }));
      expect(tooBig).toBeInstanceOf(AccountLimitReached);
      expect(tooBig).toMatchObject({ budget: 'file_storage', limit: 10_000, count: 9_000 });
      expect((tooBig as AccountLimitReached).message).toMatch(/maxFileStorageBytes/);
      // No declared size: the room left, up to the bound of a file; then none is left, and the next is refused.
      expect(reservedOf(await commitOne(second, startUpload(4, { bytes: 8_000, declared: false })))).toBe(1_000);
      expect(refusedFor([await commitOne(first, startUpload(5, { declared: false }))], 'file_storage')).toHaveLength(1);
      // The stored file of upload 2 takes its reservation, smaller than declared: the rest is room again.
      expect(typesOf(await commitOne(first, uploadedFile(2, { bytes: 3_000 })))).toEqual([
        'FileCreated',
        'FileUploadEnded',
      ]);
      expect(await counts(second)).toEqual({ bytes: 7_000, files: 2 });
      expect(reservedOf(await commitOne(second, startUpload(6, { bytes: 2_000 })))).toBe(2_000);
    });

    it('counts files per account and refuses an upload beyond maxFiles, counting the uploads streaming, never a batch its output files', async () => {
      const store = await open();
      const few = { maxFiles: 3 };
      await store.commit({ commands: [uploadedFile(1), uploadedFile(2)] });
      expect(made([await commitOne(store, startUpload(3, few))])).toHaveLength(1);
      // Two kept and one streaming: the third place is taken.
      const refused = await commitOne(store, startUpload(4, few));
      expect(refused).toMatchObject({ budget: 'files', limit: 3, count: 3 });
      expect((refused as AccountLimitReached).message).toMatch(/maxFiles/);
      await commitOne(store, endUpload(3));
      expect(made([await commitOne(store, startUpload(4, few))])).toHaveLength(1);
      expect(await counts(store)).toMatchObject({ files: 2 });
      // A batch's output file is counted, beyond the bound too.
      await commitOne(store, createBatch(batchIdOf(1), fileIdOf(1)));
      await commitOne(store, takeBatch(batchIdOf(1)));
      const batch = (command: Parameters<typeof batchCommand>[1]) =>
        commitOne(store, batchCommand(batchIdOf(1), command));
      await batch({ type: 'StartBatch', owner: batchRunner, total: 0, model: 'echo', now: 400 });
      await batch({ type: 'FinalizeBatch', owner: batchRunner, now: 450 });
      const outputFile = { fileId: fileIdOf(90), filename: 'out.jsonl', bytes: 5, sha256: 'a'.repeat(64) };
      const errorFile = { fileId: fileIdOf(91), filename: 'err.jsonl', bytes: 5, sha256: 'b'.repeat(64) };
      const end = await batch({
        type: 'EndBatch',
        owner: batchRunner,
        outputFile,
        errorFile,
        completed: 0,
        failed: 0,
        now: 500,
      });
      expect(typesOf(end)).toEqual(['FileCreated', 'FileCreated', 'BatchEnded']);
      expect(await counts(store)).toMatchObject({ files: 4 });
      // Deleting files frees places.
      await commitOne(store, fileCommand(fileIdOf(90), { type: 'DeleteFile', accountId: accountId(1), now: 600 }));
      expect(await counts(store)).toMatchObject({ files: 3 });
    });

    it('counts a reservation past its time in no decision, lists it as lapsed until it is ended, and decides its late file afresh', async () => {
      const store = await open();
      const one = { maxConcurrentUploads: 1 };
      await commitOne(store, startUpload(1, { ...one, bytes: 9_000 }));
      expect(
        refusedFor([await commitOne(store, startUpload(2, { ...one, now: 2_000 }))], 'concurrent_uploads'),
      ).toHaveLength(1);
      expect(await store.reads.lapsedUploads(1_000 + heldMs - 1, 10)).toEqual([]);
      // Its time is up: its place and its room are free, though nothing ended it yet.
      const after = 1_000 + heldMs;
      expect(reservedOf(await commitOne(store, startUpload(3, { ...one, bytes: 9_000, now: after })))).toBe(9_000);
      expect(await store.reads.lapsedUploads(after, 10)).toEqual([{ accountId: accountId(1), fileId: fileIdOf(1) }]);
      // Its file, late, is decided as a new arrival: the room is upload 3's now.
      const late = await commitOne(store, uploadedFile(1, { bytes: 9_000, now: after + 1 }));
      expect(late).toMatchObject({ budget: 'file_storage' });
      // Only a reservation whose time is up may be ended as lapsed; then it is listed no more.
      expect(await commitOne(store, endUpload(3, { lapsed: true, now: after + 2 }))).toMatchObject({
        _tag: 'Refused',
      });
      expect(typesOf(await commitOne(store, endUpload(1, { lapsed: true, now: after + 2 })))).toEqual([
        'FileUploadEnded',
      ]);
      expect(await store.reads.lapsedUploads(after + 2, 10)).toEqual([]);
      expect((await store.reads.uploadsOf(accountId(1))).map((upload) => upload.fileId)).toEqual([fileIdOf(3)]);
      expect(await commitOne(store, endUpload(1, { now: after + 3 }))).toMatchObject({ _tag: 'Refused' });
    });

    it("lists an account's files of one purpose from their own index, in both orders and by cursor, and none of another account's", async () => {
      const store = await open();
      const purposeOf = (n: number) => (n % 3 === 0 ? 'batch_output' : 'batch');
      await store.commit({
        commands: [
          ...oneToN(12).map((n) => createFile(fileIdOf(n), { now: 100 + n, purpose: purposeOf(n) })),
          createFile(fileIdOf(50), { account: 2, now: 105, purpose: 'batch_output' }),
        ],
      });
      const list = (order: 'asc' | 'desc', limit: number, purpose?: string, from?: number) =>
        store.reads.listOf('accountFiles', accountId(1), {
          order,
          limit,
          purpose,
          from: from === undefined ? undefined : { createdAt: 100 + from, id: fileIdOf(from) },
        });
      const outputs = [3, 6, 9, 12].map(fileIdOf);
      expect(await list('asc', 10, 'batch_output')).toEqual(outputs);
      expect(await list('desc', 2, 'batch_output')).toEqual([fileIdOf(12), fileIdOf(9)]);
      expect(await list('desc', 10, 'batch_output', 9)).toEqual([fileIdOf(6), fileIdOf(3)]);
      expect(await list('asc', 1, 'batch_output', 6)).toEqual([fileIdOf(9)]);
      // A cursor of another purpose is a place in time, as one deleted is.
      expect(await list('asc', 10, 'batch_output', 7)).toEqual([fileIdOf(9), fileIdOf(12)]);
      expect(await list('asc', 10, 'batch')).toHaveLength(8);
      expect(await list('asc', 10, 'no_such_purpose')).toEqual([]);
      expect(await list('desc', 20)).toHaveLength(12);
      // Deleted: gone from its purpose's list too.
      await commitOne(store, fileCommand(fileIdOf(6), { type: 'DeleteFile', accountId: accountId(1), now: 200 }));
      expect(await list('asc', 10, 'batch_output')).toEqual([3, 9, 12].map(fileIdOf));
    });

    it('answers a list page of at most maxListRows ids, however large the limit asked', async () => {
      const store = await open();
      const total = maxListRows + 5;
      for (let from = 1; from <= total; from += 2_000)
        await store.commit({
          commands: oneToN(Math.min(2_000, total - from + 1)).map((i) => createFile(fileIdOf(from + i - 1))),
        });
      const page = await store.reads.listOf('accountFiles', accountId(1), { order: 'asc', limit: 1_000_000 });
      expect(page).toHaveLength(maxListRows);
      const ofPurpose = await store.reads.listOf('accountFiles', accountId(1), {
        order: 'desc',
        limit: Number.MAX_SAFE_INTEGER,
        purpose: 'batch',
      });
      expect(ofPurpose).toHaveLength(maxListRows);
    });

    itWith(
      factory.anotherProcess,
      'holds maxConcurrentUploads and maxFileStorageBytes exactly when this process and another reserve at once',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const outcomes = await Promise.all(
          oneToN(10).map((i) => {
            const command = startUpload(i, { bytes: 3_000, maxConcurrentUploads: 10 });
            return i % 2 === 0
              ? commitOne(store, command)
              : other.commit({ commands: [command] }).then(([outcome]) => outcome);
          }),
        );
        expect(made(outcomes)).toHaveLength(3);
        expect(refusedFor(outcomes, 'file_storage')).toHaveLength(7);
        const held = await store.reads.uploadsOf(accountId(1));
        expect(held.reduce((sum, upload) => sum + upload.reservedBytes, 0)).toBe(9_000);
      },
    );

    itWith(factory.reopen, "keeps an account's uploads and its count of files across a reopen", async (reopen) => {
      const store = await open();
      await store.commit({ commands: [uploadedFile(1), startUpload(2), startUpload(3)] });
      const reopened = await reopen(store);
      expect((await reopened.reads.uploadsOf(accountId(1))).map((upload) => upload.fileId)).toEqual([
        fileIdOf(2),
        fileIdOf(3),
      ]);
      expect(await counts(reopened)).toEqual({ bytes: 1_000, files: 1 });
      expect(
        refusedFor([await commitOne(reopened, startUpload(4, { maxConcurrentUploads: 2 }))], 'concurrent_uploads'),
      ).toHaveLength(1);
    });
  });
