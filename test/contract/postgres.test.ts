import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { openPostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { tempDataDir } from '../support/testApp.js';
import { builtProgram, startOtherProcess } from './otherProcess.js';
import { describeStoreContract } from './storeContract.js';

/** Each store's database URL, for every handle opened on it (another handle: another pool, as another node has). */
const handles = new Map<StoreShape, string>();
const otherProcesses: { close(): Promise<void> }[] = [];
/** Databases in a tablespace of their own on a small tmpfs (the failing disk), dropped after each test. */
const onTmpfs: { url: string; mount: string; base: string }[] = [];

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

// Each test makes a database and its schema, some start another node process: seconds on a busy 2-core machine
// shared with other runs, beyond vitest's default of 5.
vi.setConfig({ testTimeout: 30_000, hookTimeout: 30_000 });

// initdb and pg_ctl start take a few seconds (more on a busy machine): before the first test, not inside it.
beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

/** A real full disk, as the LMDB runner makes one: a small tmpfs (mounting needs root, which CI and this machine
 * have), here holding a tablespace that the store's database lives in. PostgreSQL's WAL stays on the cluster's own
 * disk, so the cluster keeps running; what fails is growing a table of that database. */
const mountTmpfs = (dir: string, megabytes: number, owner: { uid: number; gid: number }) => {
  mkdirSync(dir, { recursive: true });
  execFileSync(
    'mount',
    ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700,uid=${owner.uid},gid=${owner.gid}`, 'tmpfs', dir],
    { stdio: 'ignore' },
  );
};
const unmount = (dir: string) => {
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
  } catch {
    // Not mounted.
  }
};
const canMount = (() => {
  const probe = tempDataDir('airs-contract-mount-probe');
  try {
    mountTmpfs(join(probe, 'data'), 1, { uid: 0, gid: 0 });
    unmount(join(probe, 'data'));
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe, { recursive: true, force: true });
  }
})();

/** Fills the file system under `dir` to its last page with a file that `free` removes. */
const fillerOf = (dir: string) => join(dir, 'filler');
const fill = (dir: string) => {
  const fd = openSync(fillerOf(dir), 'a');
  const chunk = Buffer.alloc(1 << 20, 1);
  try {
    for (let size = chunk.length; size >= 512; ) {
      try {
        writeSync(fd, chunk, 0, size);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
        size = Math.floor(size / 2);
      }
    }
  } finally {
    closeSync(fd);
  }
};

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
  failingDisk: canMount
    ? async () => {
        const cluster = await testCluster();
        const base = tempDataDir('airs-contract-pg-disk');
        const mount = join(base, 'data');
        // The cluster's user must reach the tablespace through the (root's, private) temporary directory.
        chmodSync(base, 0o711);
        // A new database copies template0 (about 8 MB) into its tablespace.
        mountTmpfs(mount, 32, cluster.owner);
        const location = join(mount, 'tablespace');
        mkdirSync(location);
        chownSync(location, cluster.owner.uid, cluster.owner.gid);
        const url = await cluster.createDatabase(location);
        onTmpfs.push({ url, mount, base });
        const store = await openOn(url);
        return {
          store,
          fail: async () => fill(mount),
          recover: async () => rmSync(fillerOf(mount), { force: true }),
        };
      }
    : { unsupported: 'mounting a small tmpfs as a full disk needs root, which this run has not got' },
  dispose: async () => {
    for (const other of otherProcesses.splice(0)) await other.close();
    for (const store of [...handles.keys()]) await store.close();
    handles.clear();
    for (const { url, mount, base } of onTmpfs.splice(0)) {
      await (await testCluster()).dropDatabase(url);
      unmount(mount);
      rmSync(base, { recursive: true, force: true });
    }
  },
});
