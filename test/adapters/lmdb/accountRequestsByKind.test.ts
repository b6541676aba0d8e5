import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { requestsByKindIndexedKey } from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { Command } from '../../../src/domain/commands.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const ttlMs = 86_400_000;
const submit = (reqId: string, accountId: string, now: number): Command =>
  submitCommand(reqId, now, { accountId, ttlMs });
const expire = (reqId: string, now: number): Command => ({ type: 'Expire', reqId, now });
const idsOf = (rows: readonly { context: { reqId: string } }[]) => rows.map((row) => row.context.reqId);

describe("The LMDB store's index of an account's requests by kind (idx.accountRequestsByKind)", () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const index = () => Array.from(store.databases.indexes.accountRequestsByKind.getKeys({}));

  it('is built once from the request records for a data directory written before it existed, and checked by replay --verify', async () => {
    dir = tempDataDir('airs-requests-by-kind');
    store = openLmdbStore(dir);
    expect(store.databases.meta.get(requestsByKindIndexedKey)).toBe(1);
    await store.commit({
      commands: [
        submit('req_1', 'acct_a', 1_000),
        submit('req_2', 'acct_b', 2_000),
        submit('req_3', 'acct_a', 3_000),
        submit('req_gone', 'acct_a', 500),
      ],
    });
    await store.commit({ commands: [expire('req_gone', 500 + ttlMs)] });
    const built = index();
    expect(built).toEqual([
      ['acct_a', 'interactive', 1_000, 'req_1'],
      ['acct_a', 'interactive', 3_000, 'req_3'],
      ['acct_b', 'interactive', 2_000, 'req_2'],
    ]);
    // What an older airs left: no index, no marker; verify names the difference.
    const dbs = store.databases;
    await dbs.root.transaction(() => {
      for (const key of dbs.indexes.accountRequestsByKind.getKeys({})) dbs.indexes.accountRequestsByKind.remove(key);
      dbs.meta.remove(requestsByKindIndexedKey);
    });
    expect(verifyViews(dbs).differences).toContain('index accountRequestsByKind: 0 entries stored, the log gives 3');
    await store.close();

    store = openLmdbStore(dir);
    expect(index()).toEqual(built);
    expect(store.databases.meta.get(requestsByKindIndexedKey)).toBe(1);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { limit: 10, kind: 'interactive' }))).toEqual(['req_3', 'req_1']);
    expect(idsOf(store.syncReads.requestsOf('acct_a', { limit: 10, kind: 'batch' }))).toEqual([]);
    expect(verifyViews(store.databases).differences).toEqual([]);

    // An entry the log does not make is named.
    await store.databases.indexes.accountRequestsByKind.put(['acct_a', 'batch', 1_000, 'req_1'], '');
    expect(verifyViews(store.databases).differences).toEqual([
      'index accountRequestsByKind acct_a\u0001batch\u00011000\u0001req_1: stored but not produced by the log',
      'index accountRequestsByKind: 4 entries stored, the log gives 3',
    ]);
  });
});
