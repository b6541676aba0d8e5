import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMap, encodeMap } from '../../../src/adapters/lmdb/codec.js';
import { openDatabases } from '../../../src/adapters/lmdb/databases.js';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { lmdbLogSource } from '../../../src/adapters/lmdb/logSource.js';
import { openDb } from '../../../src/adapters/postgres/db.js';
import { importLog, SourceDamaged } from '../../../src/adapters/postgres/importLog.js';
import { openPostgresStore } from '../../../src/adapters/postgres/PostgresStore.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import {
  answer,
  ask,
  batchCommand,
  batchIdOf,
  batchRunner,
  createAccount,
  createBatch,
  createFile,
  fileCommand,
  fileIdOf,
  lineSubmit,
  oneToN,
  policy,
  queueOf,
  startBatch,
  submit,
  takeBatch,
} from '../../contract/fixtures.js';
import { stopTestCluster, testCluster } from '../../support/postgres.js';
import { tempDataDir } from '../../support/testApp.js';

/**
 * `airs migrate` of a data directory holding batches and files: each batch's view (its lines' counts summed from its
 * lines' events), the files that exist, the lists and the open batches read the same on the copy as on the source,
 * whatever the pages the log is copied in; and a waiting line keeps waiting in its batch lane.
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const lines = 6;

/** Two accounts' batches in every stage (lines completed, failed, cancelled, expired, waiting), their files, and an
 * upload streaming. */
const fill = async (store: StoreShape) => {
  const commit = async (...commands: Command[]) => {
    for (const outcome of await store.commit({ commands }))
      if (outcome instanceof Error) throw new Error(`the fixture was refused: ${outcome.message}`);
  };
  await commit(
    createAccount(1),
    createAccount(2),
    createFile(fileIdOf(1)),
    createFile(fileIdOf(2), { account: 2 }),
    createFile(fileIdOf(3)),
    createBatch(batchIdOf(1), fileIdOf(1)),
    createBatch(batchIdOf(2), fileIdOf(2), { account: 2, now: 210 }),
    createBatch(batchIdOf(3), fileIdOf(3), { now: 220 }),
    takeBatch(batchIdOf(1)),
    takeBatch(batchIdOf(2)),
    takeBatch(batchIdOf(3)),
  );
  await commit(
    startBatch(batchIdOf(1), lines),
    startBatch(batchIdOf(2), 2),
    batchCommand(batchIdOf(3), { type: 'FailValidation', owner: batchRunner, errors: '[]', now: 500 }),
    fileCommand(fileIdOf(3), { type: 'DeleteFile', accountId: 'acct_1', now: 600 }),
    // Two uploads streaming, one of which fails: their reservations (issue 40).
    ...[4, 5].map((n) =>
      fileCommand(fileIdOf(n), {
        type: 'StartUpload',
        accountId: 'acct_1',
        bytes: 100 * n,
        shrinkToRoom: false,
        now: 610,
        heldUntil: 60_610,
        maxStoredBytes: 10_000,
        maxFiles: 10,
        maxConcurrentUploads: 2,
      }),
    ),
    fileCommand(fileIdOf(4), { type: 'EndUpload', accountId: 'acct_1', now: 620 }),
  );
  await commit(
    ...oneToN(lines).map((n) => lineSubmit(batchIdOf(1), n)),
    ...oneToN(2).map((n) => lineSubmit(batchIdOf(2), n, { account: 2 })),
    submit('req_interactive', { now: 1_500 }),
  );
  const queue = queueOf(store);
  const held = (await queue.claim(ask('A', 2_000, { max: 4 }))).started;
  // Lanes in turn: the interactive request, a line of each batch, then account 1's next line (left processing).
  const [a, b, c] = held;
  if (a === undefined || b === undefined || c === undefined) throw new Error('requests should have started');
  await queue.recordSuccess({ ...a, owner: 'A' }, answer('one'), 2_100);
  await queue.recordFailure({ ...b, owner: 'A' }, 'upstream 400', { ...policy, maxAttempts: 1 }, 2_100);
  await queue.recordSuccess({ ...c, owner: 'A' }, answer('three'), 2_100);
  await commit({ type: 'Cancel', reqId: lineRequestId(batchIdOf(2), 2), now: 2_200 });
  await commit({ type: 'Expire', reqId: lineRequestId(batchIdOf(1), lines), now: 1_000 + lines + 60_000 });
  return held.map((entry) => entry.reqId);
};

/** What the read model answers of batches, files and the lines. */
const readsOf = async (store: StoreShape, reqIds: readonly string[]) => ({
  batches: await Promise.all(oneToN(3).map((n) => store.reads.batch(batchIdOf(n)))),
  files: await Promise.all(oneToN(3).map((n) => store.reads.file(fileIdOf(n)))),
  lists: await Promise.all(
    ['acct_1', 'acct_2'].flatMap((accountId) =>
      (['accountBatches', 'accountFiles'] as const).map((list) =>
        store.reads.listOf(list, accountId, { order: 'desc', limit: 10 }),
      ),
    ),
  ),
  byPurpose: await Promise.all(
    ['batch', 'batch_output'].map((purpose) =>
      store.reads.listOf('accountFiles', 'acct_1', { order: 'asc', limit: 10, purpose }),
    ),
  ),
  uploads: await Promise.all(['acct_1', 'acct_2'].map((accountId) => store.reads.uploadsOf(accountId))),
  open: await store.reads.openBatches(10),
  requests: await Promise.all(reqIds.map((reqId) => store.reads.request(reqId))),
  depths: await store.reads.queueDepths(10_000, 100),
});

describe('airs migrate of batches and files', () => {
  it('copies every batch with its counts, the files that exist, the lists and the open batches, in pages of one event or of all', async () => {
    const dir = tempDataDir('airs-import-batches');
    try {
      const source = openLmdbStore(dir);
      const held = await fill(source);
      const reqIds = [
        ...held,
        ...oneToN(lines).map((n) => lineRequestId(batchIdOf(1), n)),
        ...oneToN(2).map((n) => lineRequestId(batchIdOf(2), n)),
        'req_interactive',
      ];
      const expected = await readsOf(source, reqIds);
      expect(expected.batches[0]?.counts).toEqual({
        queued: lines,
        completed: expect.any(Number),
        failed: expect.any(Number),
        inputTokens: expect.any(Number),
        outputTokens: expect.any(Number),
        answerChars: expect.any(Number),
        keptAnswerChars: expect.any(Number),
      });
      expect(expected.open.map((open) => open.batchId)).toEqual([batchIdOf(1), batchIdOf(2)]);
      expect(expected.uploads.map((uploads) => uploads.map((upload) => upload.fileId))).toEqual([[fileIdOf(5)], []]);
      expect(expected.byPurpose).toEqual([[fileIdOf(1)], []]);
      await source.close();

      const dbs = openDatabases(dir);
      try {
        for (const pageEvents of [1, 10_000]) {
          const url = await (await testCluster()).createDatabase();
          const db = openDb(url, 1);
          try {
            const summary = await importLog(db, lmdbLogSource(dbs), { where: 'the test database', pageEvents });
            expect(summary.differences).toEqual([]);
          } finally {
            await db.end();
          }
          const copy = await openPostgresStore(url, { maxConnections: 2 });
          try {
            expect(JSON.parse(JSON.stringify(await readsOf(copy, reqIds)))).toEqual(
              JSON.parse(JSON.stringify(expected)),
            );
            // The lines left waiting are claimed from the copy, after the interactive request (its own lane first).
            const claimed = await queueOf(copy).claim(ask('B', 3_000, { max: 10 }));
            expect(claimed.started.length).toBeGreaterThan(0);
            expect(claimed.started.every(({ reqId }) => reqIds.includes(reqId))).toBe(true);
          } finally {
            await copy.close();
          }
        }
      } finally {
        await dbs.root.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);

  it("refuses a source whose batch's view differs from its log (counts changed by hand), and writes nothing", async () => {
    const dir = tempDataDir('airs-import-batches-damaged');
    try {
      const source = openLmdbStore(dir);
      await fill(source);
      await source.close();
      const dbs = openDatabases(dir);
      try {
        const view = decodeMap<{ counts: { completed: number } }>(dbs.batches.get(batchIdOf(1)) as Buffer);
        await dbs.batches.put(batchIdOf(1), encodeMap({ ...view, counts: { ...view.counts, completed: 99 } }));
        const url = await (await testCluster()).createDatabase();
        const db = openDb(url, 1);
        try {
          const refusal = await importLog(db, lmdbLogSource(dbs), { where: 'the test database' }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect(refusal).toBeInstanceOf(SourceDamaged);
          expect((refusal as Error).message).toBe(
            `batch ${batchIdOf(1)}: its record differs from the view its events give`,
          );
          // One transaction: not even the schema was left.
          const [tables] = await db.query<{ none: boolean }[]>({
            text: `SELECT to_regclass('events') IS NULL AS none`,
            values: [],
          });
          expect(tables?.none).toBe(true);
        } finally {
          await db.end();
        }
      } finally {
        await dbs.root.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
