import { afterAll, beforeAll } from 'vitest';
import { openPostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { builtProgram, startOtherProcess } from './otherProcess.js';
import { describeStoreContract } from './storeContract.js';

/** Each store's database URL, for every handle opened on it (another handle: another pool, as another node has). */
const handles = new Map<StoreShape, string>();
const otherProcesses: { close(): Promise<void> }[] = [];

const openOn = async (url: string): Promise<StoreShape> => {
  const store = await openPostgresStore(url, { maxConnections: 4 });
  handles.set(store, url);
  return store;
};

const urlOf = (store: StoreShape): string => {
  const url = handles.get(store);
  if (url === undefined) throw new Error('a store this runner did not open');
  return url;
};

// initdb and pg_ctl start take a few seconds (more on a busy machine): before the first test, not inside it.
beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

describeStoreContract({
  name: 'PostgreSQL',
  // A new database of a throwaway cluster this test process started (test/support/postgres.ts).
  open: async () => openOn(await (await testCluster()).createDatabase()),
  another: async (store) => openOn(urlOf(store)),
  // A real child process on the same database, as another node or the CLI. It runs the built code: `npm run build`
  // first.
  anotherProcess: async (store) => {
    const other = await startOtherProcess(builtProgram('postgresProcess'), [urlOf(store)]);
    otherProcesses.push(other);
    return other;
  },
  reopen: async (store) => {
    const url = urlOf(store);
    handles.delete(store);
    await store.close();
    return openOn(url);
  },
  failingDisk: {
    unsupported: 'not yet: a full disk needs a tablespace on a small tmpfs (to come)',
  },
  dispose: async () => {
    for (const other of otherProcesses.splice(0)) await other.close();
    for (const store of [...handles.keys()]) await store.close();
    handles.clear();
  },
});
