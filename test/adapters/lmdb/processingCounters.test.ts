import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabases } from '../../../src/adapters/lmdb/databases.js';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { processingCountedKey } from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import { accountCounter, accountModelCounter } from '../../../src/domain/processingCounters.js';
import { ask, createAccount, oneToN, queueOf, submit } from '../../contract/fixtures.js';
import { tempDataDir } from '../../support/testApp.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("The counts of requests being processed per account (LMDB's upgrade)", () => {
  it('are counted again, once, at the first open of a data directory an older airs counted per model only, and bound the next claim', async () => {
    const dir = tempDataDir('airs-counters');
    dirs.push(dir);
    const store = openLmdbStore(dir);
    await store.commit({
      commands: [createAccount(1), ...oneToN(4).map((i) => submit(`req_${i}`, { now: 1_000 + i }))],
    });
    expect((await queueOf(store).claim(ask('A', 2_000, { max: 2 }))).started).toHaveLength(2);
    await store.close();
    // As an older airs left it: counts per model only, marked 1.
    const old = openDatabases(dir);
    old.root.transactionSync(() => {
      for (const key of old.processingCounts.getKeys({}))
        if (key.startsWith('\u001f')) old.processingCounts.remove(key);
      old.meta.put(processingCountedKey, 1);
    });
    expect(verifyViews(old).differences).toEqual([
      `processing count ${accountCounter('acct_1')}: produced by the log but not stored`,
      `processing count ${accountModelCounter('acct_1', 'echo')}: produced by the log but not stored`,
    ]);
    await old.root.close();

    const reopened = openLmdbStore(dir);
    try {
      expect(verifyViews(reopened.databases).differences).toEqual([]);
      // The free plan's bound of 2 is reached by the two started before the upgrade: nothing more starts.
      const claim = ask('B', 3_000, { max: 2, maxProcessing: { free: 2 } });
      expect((await queueOf(reopened).claim(claim)).started).toEqual([]);
    } finally {
      await reopened.close();
    }
  });
});
