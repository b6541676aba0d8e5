import { decodeMap, decodeRecord, encodeMap, encodeRecord } from '../../src/adapters/lmdb/codec.js';
import { type LmdbDatabases, openDatabases, requestKey } from '../../src/adapters/lmdb/databases.js';
import { type LmdbStore, openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { encodeLogRecord } from '../../src/adapters/lmdb/logRecord.js';
import { queuedCountedKey } from '../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import type { AccountEvent } from '../../src/domain/account/events.js';
import type { AccountState } from '../../src/domain/account/state.js';
import type { BatchView } from '../../src/domain/batch/state.js';
import type { RequestState } from '../../src/domain/request/state.js';
import { type IndexName, projectAccountEvent, type ViewAccess } from '../../src/storage/projection.js';
import type { TestApp } from './testApp.js';

/**
 * A test's hands inside an LMDB data directory, the one place general tests reach the LMDB adapter: what
 * `replay --verify` finds, the store opened while no server runs, and records changed or written the way a damaged
 * directory or an older version would hold them. Tests of LMDB itself live in test/adapters/lmdb.
 */

/** LMDB's store on `dataDir` for the length of `work` (no server running), closed after. */
export const withLmdbStore = async <A>(dataDir: string, work: (store: LmdbStore) => A | Promise<A>): Promise<A> => {
  const store = openLmdbStore(dataDir);
  try {
    return await work(store);
  } finally {
    await store.close();
  }
};

const withDatabases = async <A>(dataDir: string, work: (dbs: LmdbDatabases) => A | Promise<A>): Promise<A> => {
  const dbs = openDatabases(dataDir);
  try {
    return await work(dbs);
  } finally {
    await dbs.root.close();
  }
};

/** What `replay --verify` finds wrong in the views of an app on LMDB (`store: 'lmdb'`): none, when right. */
export const lmdbViewDifferences = (app: TestApp): readonly string[] => {
  if (app.testStore.kind !== 'lmdb')
    throw new Error(`the app runs on ${app.testStore.kind}: start it with store 'lmdb'`);
  return verifyViews((app.store as LmdbStore).databases).differences;
};

/** What `replay --verify` finds wrong in the views of a data directory no server has open. */
export const dataDirViewDifferences = (dataDir: string): Promise<readonly string[]> =>
  withDatabases(dataDir, (dbs) => verifyViews(dbs).differences);

/** The LMDB databases under a running app on LMDB, for a test that damages its views on purpose. */
export const lmdbDatabasesOf = (app: TestApp): LmdbDatabases => {
  if (app.testStore.kind !== 'lmdb')
    throw new Error(`the app runs on ${app.testStore.kind}: start it with store 'lmdb'`);
  return (app.store as LmdbStore).databases;
};

/** Rewrites a request's stored view (its text kept) as `change` makes it: a view that no longer follows the log. */
export const changeStoredRequest = (
  dataDir: string,
  reqId: string,
  change: (state: RequestState) => RequestState,
): Promise<RequestState | undefined> =>
  withDatabases(dataDir, (dbs) => {
    const bytes = dbs.requests.get(requestKey(reqId));
    const stored = bytes === undefined ? undefined : decodeRecord(bytes);
    if (stored !== undefined) dbs.requests.putSync(requestKey(reqId), encodeRecord(change(stored.state), stored.text));
    return stored?.state;
  });

/** Rewrites a batch's stored view as `change` makes it: counts that no longer follow the log. */
export const changeStoredBatch = (dataDir: string, batchId: string, change: (view: BatchView) => BatchView) =>
  withDatabases(dataDir, (dbs) => {
    const view = decodeMap<BatchView>(dbs.batches.get(batchId) as Buffer);
    dbs.batches.putSync(batchId, encodeMap(change(view)));
  });

/**
 * Appends an account created by an older version that let any email through: the event in the log and the views
 * the projection makes of it, written as the store writes them (the decider of this version would refuse it).
 */
export const storeOldAccount = (dataDir: string, email: string) =>
  withDatabases(dataDir, (dbs) => {
    const views = {
      getAccount: (id: string) => {
        const stored = dbs.accounts.getBinaryFast(id);
        return stored === undefined ? undefined : decodeMap<AccountState>(stored);
      },
      putAccount: (id: string, state: AccountState) => void dbs.accounts.put(id, encodeMap(state)),
      putIndex: (index: IndexName, key: string, value: string) => void dbs.indexes[index].put(key, value),
      bumpAccountsVersion: () => void dbs.meta.put('accountsVersion', (dbs.meta.get('accountsVersion') ?? 0) + 1),
    } as unknown as ViewAccess;
    dbs.root.transactionSync(() => {
      const seq = (dbs.meta.get('lastSeq') ?? 0) + 1;
      const event: AccountEvent = { type: 'AccountCreated', accountId: 'acct_old', email, plan: 'free', at: 1_000 };
      dbs.log.put(seq, encodeLogRecord([{ ...event, seq }]));
      dbs.meta.put('lastSeq', seq);
      projectAccountEvent(views, event);
    });
  });

/**
 * Leaves a data directory as an airs from before the queued counts left it: no counts, no marker saying they were
 * made. Returns what `replay --verify` then finds.
 */
export const forgetQueuedCounts = (dataDir: string): Promise<readonly string[]> =>
  withDatabases(dataDir, (dbs) => {
    dbs.root.transactionSync(() => {
      for (const key of dbs.queuedCounts.getKeys({})) dbs.queuedCounts.remove(key);
      dbs.meta.remove(queuedCountedKey);
    });
    return verifyViews(dbs).differences;
  });
