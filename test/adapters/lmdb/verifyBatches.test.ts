import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeMap, encodeMap } from '../../../src/adapters/lmdb/codec.js';
import { lastSeqKey } from '../../../src/adapters/lmdb/databases.js';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { encodeLogRecord } from '../../../src/adapters/lmdb/logRecord.js';
import {
  accountsCountedKey,
  batchAnswersCountedKey,
  filesByPurposeIndexedKey,
  openBatchesIndexedKey,
} from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import { openBatchesCounter, storedBytesCounter, storedFilesCounter } from '../../../src/domain/accountCounters.js';
import type { BatchView } from '../../../src/domain/batch/state.js';
import type { Command } from '../../../src/domain/commands.js';
import { isRefusal } from '../../../src/domain/commands.js';
import { dispatchLaneOf } from '../../../src/domain/dispatchLane.js';
import type { StoredEvent } from '../../../src/domain/events.js';
import type { FileState } from '../../../src/domain/file/state.js';
import { type FileDigest, verifyFileDigests } from '../../../src/storage/verifyBatches.js';
import { batchFailureEndings, batchFailureWrites } from '../../support/batchFailureLog.js';
import { batchLogWrites, digestOf, done, line, open, owner, sha } from '../../support/batchLog.js';
import { tempDataDir } from '../../support/testApp.js';

describe("LMDB's replay --verify of batches and files (rebuilt from the log and compared)", () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const commit = async (...commands: Command[]) => {
    const outcomes = await store.commit({ commands });
    for (const outcome of outcomes) expect(isRefusal(outcome) || outcome instanceof Error ? outcome : 'ok').toBe('ok');
  };

  /** The log of test/support/batchLog.ts, written as the server writes it. */
  const written = async () => {
    dir = tempDataDir('airs-verify-batches');
    store = openLmdbStore(dir);
    for (const commands of batchLogWrites) await commit(...commands);
    store.syncReads.refresh();
    return store.databases;
  };
  const differences = () => verifyViews(store.databases).differences;
  /** The files the log leaves (two inputs and one batch's output). */
  const files = 3;
  const storedBatch = (batchId: string) => decodeMap<BatchView>(store.databases.batches.get(batchId) as Buffer);

  it('finds nothing to report in a batch whose lines completed, failed and were cancelled, nor in its files', async () => {
    await written();
    expect(storedBatch(done).state.status).toBe('completed');
    expect(storedBatch(done).counts).toEqual({
      queued: 3,
      completed: 1,
      failed: 2,
      inputTokens: 10,
      outputTokens: 4,
      answerChars: 3,
      keptAnswerChars: 0,
    });
    expect(verifyViews(store.databases)).toMatchObject({ batches: 2, files: 3, differences: [] });
  });

  it('finds nothing to report in batches ended by their housekeeping’s failures, or by the operator while finalizing', async () => {
    dir = tempDataDir('airs-verify-batches');
    store = openLmdbStore(dir);
    for (const commands of batchFailureWrites) await commit(...commands);
    store.syncReads.refresh();
    for (const [batchId, status] of Object.entries(batchFailureEndings))
      expect(storedBatch(batchId).state.status).toBe(status);
    expect(verifyViews(store.databases)).toMatchObject({ batches: 4, differences: [] });
  });

  it('names a batch whose stored counts differ from its lines’ events, with both counts', async () => {
    const dbs = await written();
    const view = storedBatch(done);
    dbs.batches.putSync(done, encodeMap({ ...view, counts: { ...view.counts, completed: 2, failed: 1 } }));
    expect(differences()).toEqual([
      `batch ${done}: the stored counts differ from the log's (stored queued 3, completed 2, failed 1, tokens 10/4, answers 3 characters (0 kept); the log gives queued 3, completed 1, failed 2, tokens 10/4, answers 3 characters (0 kept))`,
    ]);
  });

  it('names a batch whose stored state differs from the fold of its events', async () => {
    const dbs = await written();
    const view = storedBatch(open);
    dbs.batches.putSync(open, encodeMap({ ...view, state: { ...view.state, status: 'cancelling' } }));
    expect(differences()).toEqual([`batch ${open}: the stored state differs from the log's`]);
  });

  it("names an open batch missing from its account's open batches, and an ended one left in them", async () => {
    const dbs = await written();
    expect(Array.from(dbs.indexes.accountOpenBatches.getKeys({}))).toEqual([['acct_1', open]]);
    dbs.indexes.accountOpenBatches.removeSync(['acct_1', open]);
    dbs.indexes.accountOpenBatches.putSync(['acct_1', done], '');
    expect(differences()).toEqual(
      expect.arrayContaining([
        `index accountOpenBatches acct_1\u0001${done}: stored but not produced by the log`,
        `index accountOpenBatches acct_1\u0001${open}: produced by the log but not stored`,
      ]),
    );
    expect(differences()).toHaveLength(2);
  });

  it('names an open batch missing from the index of the files open batches read, and an ended one left in it', async () => {
    const dbs = await written();
    expect(Array.from(dbs.indexes.openBatchInputs.getKeys({}))).toEqual([['file_in2', open]]);
    dbs.indexes.openBatchInputs.removeSync(['file_in2', open]);
    dbs.indexes.openBatchInputs.putSync(['file_in1', done], '');
    expect(differences()).toEqual([
      `index openBatchInputs file_in1\u0001${done}: stored but not produced by the log`,
      `index openBatchInputs file_in2\u0001${open}: produced by the log but not stored`,
    ]);
  });

  it('indexes the open batches of a data directory written before they were indexed by account and by input file, once, at its first open', async () => {
    const dbs = await written();
    // As an older airs left it: the open batches in `idx.openBatches` ([batchId] → accountId), no new index, no marker.
    const old = dbs.root.openDB<string, [string]>({ name: 'idx.openBatches' });
    dbs.root.transactionSync(() => {
      for (const key of dbs.indexes.accountOpenBatches.getKeys({})) dbs.indexes.accountOpenBatches.remove(key);
      for (const key of dbs.indexes.openBatchInputs.getKeys({})) dbs.indexes.openBatchInputs.remove(key);
      old.put([open], 'acct_1');
      dbs.meta.remove(openBatchesIndexedKey);
    });
    expect(differences()).toHaveLength(2);
    await store.close();
    store = openLmdbStore(dir);
    expect(differences()).toEqual([]);
    expect(await store.reads.openBatchAccounts(undefined, 10)).toEqual(['acct_1']);
    expect(await store.reads.openBatchesOf('acct_1', undefined, 10)).toEqual([open]);
    expect(await store.reads.isOpenBatchInput('file_in2')).toBe(true);
    expect(await store.reads.isOpenBatchInput('file_in1')).toBe(false);
    // The old index is left empty.
    const left = store.databases.root.openDB<string, [string]>({ name: 'idx.openBatches' });
    expect(Array.from(left.getKeys({}))).toEqual([]);
  });

  it('names a batch missing from its account’s batches, and a view stored for a batch the log never made', async () => {
    const dbs = await written();
    const view = storedBatch(done);
    dbs.indexes.accountBatches.removeSync(['acct_1', 1_100, done]);
    dbs.batches.putSync('batch_made_up', encodeMap(view));
    expect(differences()).toEqual(
      expect.arrayContaining([
        `index accountBatches acct_1\u00011100\u0001${done}: produced by the log but not stored`,
        'batch batch_made_up: stored but not produced by the log',
      ]),
    );
  });

  it('names the view and the list entry of a file the log deleted, left behind', async () => {
    const dbs = await written();
    const gone: FileState = {
      fileId: 'file_gone',
      accountId: 'acct_1',
      purpose: 'batch',
      filename: 'file_gone.jsonl',
      ...digestOf('file_gone'),
      createdAt: 1_000,
    };
    dbs.files.putSync('file_gone', encodeMap(gone));
    dbs.indexes.accountFiles.putSync(['acct_1', 1_000, 'file_gone'], 'batch');
    expect(differences()).toEqual([
      'file file_gone: stored but the log deleted it',
      'index accountFiles acct_1\u00011000\u0001file_gone: stored but not produced by the log',
    ]);
  });

  it("names an account's count of open batches, and of bytes of files kept, that differ from the log's", async () => {
    const dbs = await written();
    const open = dbs.accountCounts.get(openBatchesCounter('acct_1')) as number;
    const bytes = dbs.accountCounts.get(storedBytesCounter('acct_1')) as number;
    expect(open).toBe(1);
    expect(bytes).toBeGreaterThan(0);
    dbs.accountCounts.putSync(openBatchesCounter('acct_1'), open + 1);
    dbs.accountCounts.removeSync(storedBytesCounter('acct_1'));
    dbs.accountCounts.putSync(openBatchesCounter('acct_9'), 3);
    expect(differences()).toEqual([
      `account count batches of acct_1: stored ${open + 1} but the log gives ${open}`,
      'account count batches of acct_9: stored 3 but the log gives 0',
      `account count fileBytes of acct_1: stored 0 but the log gives ${bytes}`,
    ]);
  });

  it('counts the batches and files of a data directory written before the counts existed, once, at its first open', async () => {
    const dbs = await written();
    const counted = Array.from(dbs.accountCounts.getRange({}), ({ key, value }) => [key, value]);
    // Open batches, stored bytes, files and lines not ended (the open batch's waiting line) of acct_1.
    expect(counted).toHaveLength(4);
    // As an older airs left it: no counts, no marker.
    dbs.root.transactionSync(() => {
      for (const key of dbs.accountCounts.getKeys({})) dbs.accountCounts.remove(key);
      dbs.meta.remove(accountsCountedKey);
    });
    expect(differences()).toHaveLength(4);
    await store.close();
    store = openLmdbStore(dir);
    expect(Array.from(store.databases.accountCounts.getRange({}), ({ key, value }) => [key, value])).toEqual(counted);
    expect(differences()).toEqual([]);
  });

  it('counts the files of a data directory counted before files were, once, at its first open', async () => {
    const dbs = await written();
    const counted = Array.from(dbs.accountCounts.getRange({}), ({ key, value }) => [key, value]);
    // As the airs before issue 40 left it: open batches and bytes counted (marker 1), files not.
    dbs.root.transactionSync(() => {
      dbs.accountCounts.remove(storedFilesCounter('acct_1'));
      dbs.meta.put(accountsCountedKey, 1);
    });
    expect(differences()).toEqual([`account count files of acct_1: stored 0 but the log gives ${files}`]);
    await store.close();
    store = openLmdbStore(dir);
    expect(Array.from(store.databases.accountCounts.getRange({}), ({ key, value }) => [key, value])).toEqual(counted);
    expect(differences()).toEqual([]);
  });

  it('builds the index of files by purpose of a data directory written before it existed, once, at its first open', async () => {
    const dbs = await written();
    const indexed = Array.from(dbs.indexes.accountFilesByPurpose.getKeys({}));
    expect(indexed.length).toBe(files);
    dbs.root.transactionSync(() => {
      for (const key of dbs.indexes.accountFilesByPurpose.getKeys({})) dbs.indexes.accountFilesByPurpose.remove(key);
      dbs.meta.remove(filesByPurposeIndexedKey);
    });
    expect(differences()).toHaveLength(files);
    await store.close();
    store = openLmdbStore(dir);
    expect(Array.from(store.databases.indexes.accountFilesByPurpose.getKeys({}))).toEqual(indexed);
    expect(differences()).toEqual([]);
  });

  it("names an account's upload reservations stored but left by no event, and those the log leaves but are missing", async () => {
    const dbs = await written();
    const held = [{ fileId: 'file_up', reservedBytes: 10, startedAt: 1_000, heldUntil: 61_000 }];
    dbs.uploads.putSync('acct_1', encodeMap(held));
    expect(differences()).toEqual(['uploads of acct_1: stored but the log leaves none']);
    await commit({
      type: 'File',
      fileId: 'file_up2',
      command: {
        type: 'StartUpload',
        accountId: 'acct_2',
        bytes: 100,
        shrinkToRoom: false,
        now: 2_000,
        heldUntil: 62_000,
        maxStoredBytes: 1_000,
        maxFiles: 10,
        maxConcurrentUploads: 2,
      },
    });
    dbs.uploads.removeSync('acct_1');
    expect(differences()).toEqual([]);
    dbs.uploads.removeSync('acct_2');
    expect(differences()).toEqual(['uploads of acct_2: the log leaves some but none are stored']);
  });

  it("counts the answers of a data directory's batches written before answers were counted, once, at its first open", async () => {
    const dbs = await written();
    // A line of the open batch answered (its answer kept, and its room in the output file to come).
    await commit({
      type: 'Submit',
      reqId: line(open, 2),
      accountId: 'acct_1',
      keyId: 'key_1',
      model: 'echo',
      promptChars: 5,
      prompt: 'hello',
      ttlMs: 60_000,
      now: 1_800,
      batchId: open,
      customId: 'line-2',
    });
    await commit({ type: 'StartAttempt', reqId: line(open, 2), now: 1_900, owner, leaseMs: 30_000 });
    await commit({
      type: 'RecordSuccess',
      reqId: line(open, 2),
      responseChars: 6,
      response: 'hello!',
      now: 2_000,
      owner,
      attempt: 1,
    });
    store.syncReads.refresh();
    const bytes = dbs.accountCounts.get(storedBytesCounter('acct_1')) as number;
    const counted = { done: storedBatch(done).counts, open: storedBatch(open).counts };
    expect(counted.open).toMatchObject({ answerChars: 6, keptAnswerChars: 6 });
    expect(differences()).toEqual([]);
    // As an older airs left it: batch views without the answers, stored bytes of files alone, no marker.
    dbs.root.transactionSync(() => {
      for (const batchId of [done, open]) {
        const { state, counts } = storedBatch(batchId);
        const { answerChars: _a, keptAnswerChars: _k, ...older } = counts;
        dbs.batches.put(batchId, encodeMap({ state, counts: older }));
      }
      dbs.accountCounts.put(storedBytesCounter('acct_1'), bytes - 2 * 6);
      dbs.meta.remove(batchAnswersCountedKey);
    });
    expect(differences().length).toBeGreaterThan(0);
    await store.close();
    store = openLmdbStore(dir);
    expect({ done: storedBatch(done).counts, open: storedBatch(open).counts }).toEqual(counted);
    expect(store.databases.accountCounts.get(storedBytesCounter('acct_1'))).toBe(bytes);
    expect(differences()).toEqual([]);
  });

  it('names a file whose stored view differs, and one missing', async () => {
    const dbs = await written();
    const view = decodeMap<FileState>(dbs.files.get('file_out') as Buffer);
    dbs.files.putSync('file_out', encodeMap({ ...view, bytes: 121 }));
    dbs.files.removeSync('file_in1');
    expect(differences()).toEqual([
      "file file_out: the stored value differs from the log's",
      'file file_in1: produced by the log but not stored',
    ]);
  });

  it('checks a waiting line in its account’s batch lane of the dispatch index, not in the account’s own', async () => {
    const dbs = await written();
    const [entry] = Array.from(dbs.indexes.dispatch.getRange({}));
    const key = entry?.key as [string, number, string];
    expect(key).toEqual([dispatchLaneOf({ accountId: 'acct_1', batchId: open }), 1_300, line(open, 1)]);
    dbs.indexes.dispatch.removeSync(key);
    dbs.indexes.dispatch.putSync(['acct_1', key[1], key[2]], 'echo');
    expect(differences()).toEqual([
      `index dispatch acct_1\u00011300\u0001${line(open, 1)}: stored but not produced by the log`,
    ]);
  });

  it('names a batch event its machine does not accept', async () => {
    const dbs = await written();
    // One more log record, appended by hand: the running batch ended without finalizing.
    const ended: StoredEvent = { type: 'BatchEnded', batchId: open, owner, completed: 0, failed: 0, at: 2_000, seq: 0 };
    const seq = (dbs.meta.get(lastSeqKey) as number) + 1;
    dbs.log.putSync(seq, encodeLogRecord([{ ...ended, seq }]));
    dbs.meta.putSync(lastSeqKey, seq);
    expect(differences()).toEqual([`event ${seq}: BatchEnded is not accepted by the machine`]);
  });

  it('hands the rebuilt files to a check of their bytes, which names bytes missing or not as the log says', async () => {
    await written();
    let files: ReadonlyMap<string, FileState> = new Map();
    verifyViews(store.databases, {
      files: (rebuilt) => {
        files = rebuilt;
      },
    });
    expect([...files.keys()].sort()).toEqual(['file_in1', 'file_in2', 'file_out']);
    const kept: Record<string, FileDigest> = {
      file_in1: digestOf('file_in1'),
      file_out: { bytes: 120, sha256: sha('0') },
    };
    const logged = digestOf('file_out');
    expect(await verifyFileDigests(files.values(), async (fileId) => kept[fileId])).toEqual([
      'file file_in2: the log made it but its bytes are missing',
      `file file_out: its bytes differ from the log's (stored 120 bytes, sha256 ${sha('0')}; the log gives ${logged.bytes} bytes, sha256 ${logged.sha256})`,
    ]);
  });
});
