import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { tempDataDir } from '../support/testApp.js';
import { builtProgram, startOtherProcess } from './otherProcess.js';
import { describeStoreContract } from './storeContract.js';

/** Each store's data directory, and every handle opened on it (several: the same directory in one process works). */
const handles = new Map<StoreShape, string>();
const directories: string[] = [];
const mounts: string[] = [];
const otherProcesses: { close(): Promise<void> }[] = [];

const openOn = (dir: string): StoreShape => {
  const store = openLmdbStore(dir);
  handles.set(store, dir);
  return store;
};

const dirOf = (store: StoreShape): string => {
  const dir = handles.get(store);
  if (dir === undefined) throw new Error('a store this runner did not open');
  return dir;
};

/** A real full disk: a small tmpfs as the data directory (mounting needs root, which CI and this machine have). */
const mountTmpfs = (dir: string, megabytes: number) => {
  mkdirSync(dir, { recursive: true });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${megabytes}m,mode=0700`, 'tmpfs', dir], { stdio: 'ignore' });
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
    mountTmpfs(join(probe, 'data'), 1);
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
  name: 'LMDB',
  open: async () => {
    const dir = tempDataDir('airs-contract');
    directories.push(dir);
    return openOn(dir);
  },
  // A second environment handle on the same directory, as a second server process opens it (lmdb-js shares one
  // LMDB environment between the handles of a process; each handle has its own read snapshot, write queue and caches).
  another: async (store) => openOn(dirOf(store)),
  // A real child process on the same directory, as a second server or the CLI opens it (LMDB's locks and the
  // kernel's page cache are what it shares with this one). It runs the built code: `npm run build` first.
  anotherProcess: async (store) => {
    const other = await startOtherProcess(builtProgram('lmdbProcess'), [dirOf(store)]);
    otherProcesses.push(other);
    return other;
  },
  reopen: async (store) => {
    const dir = dirOf(store);
    handles.delete(store);
    await store.close();
    return openOn(dir);
  },
  failingDisk: canMount
    ? async () => {
        const base = tempDataDir('airs-contract-disk');
        directories.push(base);
        const dir = join(base, 'data');
        mountTmpfs(dir, 16);
        mounts.push(dir);
        const store = openOn(dir);
        return {
          store,
          fail: async () => fill(dir),
          recover: async () => rmSync(fillerOf(dir), { force: true }),
        };
      }
    : { unsupported: 'mounting a small tmpfs as a full disk needs root, which this run has not got' },
  dispose: async () => {
    for (const other of otherProcesses.splice(0)) await other.close();
    for (const store of [...handles.keys()]) await store.close();
    handles.clear();
    for (const dir of mounts.splice(0)) unmount(dir);
    for (const dir of directories.splice(0)) rmSync(dir, { recursive: true, force: true });
  },
});
