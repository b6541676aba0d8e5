import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openPostgresStore } from '../../../src/adapters/postgres/PostgresStore.js';
import { verifyPostgres } from '../../../src/adapters/postgres/verify.js';
import { batchFailureEndings, batchFailureWrites } from '../../support/batchFailureLog.js';
import { stopTestCluster, testCluster } from '../../support/postgres.js';

/**
 * `airs replay --verify` on PostgreSQL folds issue 40's batch events (`BatchWorkFailed`, `BatchFinalizingCancelled`)
 * as the write path does: batches ended by their housekeeping's failures, or by the operator while finalizing, verify
 * clean. A throwaway cluster of the system's binaries (test/support/postgres.ts).
 */

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

describe('replay --verify on PostgreSQL, of batches that failed in their housekeeping or were cancelled finalizing', () => {
  it('finds nothing to report, and each batch ended as its events say', async () => {
    const url = await (await testCluster()).createDatabase();
    const store = await openPostgresStore(url, { maxConnections: 4 });
    try {
      for (const commands of batchFailureWrites) {
        const outcomes = await store.commit({ commands });
        for (const outcome of outcomes) if (outcome instanceof Error || !('events' in outcome)) throw outcome;
      }
      for (const [batchId, status] of Object.entries(batchFailureEndings))
        expect((await store.reads.batch(batchId))?.state.status).toBe(status);
      const report = await verifyPostgres(store.db);
      expect(report.differences).toEqual([]);
      expect((await verifyPostgres(store.db, { pageSize: 2 })).differences).toEqual([]);
    } finally {
      await store.close();
      await (await testCluster()).dropDatabase(url);
    }
  }, 120_000);
});
