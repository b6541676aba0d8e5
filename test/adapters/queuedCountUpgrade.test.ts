import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { openDatabases } from '../../src/adapters/lmdb/databases.js';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { queuedCountedKey } from '../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import { sql } from '../../src/adapters/postgres/db.js';
import { openPostgresStore, type PostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import { migrations } from '../../src/adapters/postgres/schema.js';
import { verifyPostgres } from '../../src/adapters/postgres/verify.js';
import { QueueFull } from '../../src/domain/errors.js';
import type { StoreShape } from '../../src/ports/Store.js';
import {
  ask,
  batchIdOf,
  commitOne,
  createBatch,
  createFile,
  eventsOf,
  fileIdOf,
  lineSubmit,
  oneToN,
  queueOf,
  startBatch,
  submit,
  takeBatch,
} from '../contract/fixtures.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { tempDataDir } from '../support/testApp.js';

/**
 * Data written before issue 41 counted an account's batch lines in its queued count (`maxQueued`); the lines queued
 * then would never be taken off once they end. Each store counts again, once, when it first opens such data.
 */

/** acct_1 with three batch lines queued (one of them running) and two interactive requests (one running). */
const fill = async (store: StoreShape) => {
  const batchId = batchIdOf(1);
  await store.commit({ commands: [createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1)), takeBatch(batchId)] });
  await commitOne(store, startBatch(batchId, 3));
  await store.commit({ commands: oneToN(3).map((line) => lineSubmit(batchId, line)) });
  expect((await queueOf(store).claim(ask('A', 1_500, { max: 1 }))).started).toHaveLength(1);
  await store.commit({ commands: [submit('req_1', { now: 1_600 }), submit('req_2', { now: 1_601 })] });
  expect((await queueOf(store).claim(ask('A', 1_700, { max: 1 }))).started).toHaveLength(1);
};

/** Whether acct_1 may have one more request queued under a bound of `maxQueued`: the count it is refused with. */
const submitUnder = async (store: StoreShape, maxQueued: number) => {
  const outcome = await commitOne(store, submit(`req_under_${maxQueued}`, { maxQueued, now: 2_000 }));
  return outcome instanceof QueueFull ? { refusedAt: outcome.count } : eventsOf(outcome).map((event) => event.type);
};

const dirs: string[] = [];
const opened: PostgresStore[] = [];
vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });
afterEach(async () => {
  for (const store of opened.splice(0)) await store.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
afterAll(() => stopTestCluster(), 60_000);

describe("An account's queued count in data written before batch lines stopped counting there", () => {
  it('is counted again without the lines at the first open of an LMDB data directory an older airs counted them in', async () => {
    const dir = tempDataDir('airs-queued-count');
    dirs.push(dir);
    const store = openLmdbStore(dir);
    await fill(store);
    await store.close();
    // As an older airs left it: the three lines counted beside the two requests, marked 1.
    const old = openDatabases(dir);
    old.root.transactionSync(() => {
      old.queuedCounts.put('acct_1', 5);
      old.meta.put(queuedCountedKey, 1);
    });
    expect(verifyViews(old).differences).toEqual([
      "queued count of account acct_1: the stored value differs from the log's",
    ]);
    await old.root.close();

    const reopened = openLmdbStore(dir);
    try {
      expect(verifyViews(reopened.databases).differences).toEqual([]);
      expect(await submitUnder(reopened, 2)).toEqual({ refusedAt: 2 });
      expect(await submitUnder(reopened, 3)).toEqual(['RequestQueued']);
    } finally {
      await reopened.close();
    }
  });

  it('is counted again without the lines when PostgreSQL upgrades a database of the schema before', async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await openPostgresStore(url, { maxConnections: 3 });
    await fill(store);
    // As the schema before left it: the three lines counted beside the two requests.
    const version = migrations.findIndex((text) => text.includes('DELETE FROM queued_counts')) + 1;
    await store.db.query(sql`UPDATE queued_counts SET count = 5 WHERE account_id = 'acct_1'`);
    await store.db.query(sql`UPDATE airs_schema_version SET version = ${version - 1}`);
    expect((await verifyPostgres(store.db)).differences).toEqual([
      "queued count of account acct_1: the stored value differs from the log's",
    ]);
    await store.close();

    const upgraded = await openPostgresStore(url, { maxConnections: 3 });
    opened.push(upgraded);
    expect((await verifyPostgres(upgraded.db)).differences).toEqual([]);
    expect(await submitUnder(upgraded, 2)).toEqual({ refusedAt: 2 });
    expect(await submitUnder(upgraded, 3)).toEqual(['RequestQueued']);
  });
});
