import { openMemoryStore } from '../../src/adapters/memory/MemoryStore.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { describeStoreContract } from './storeContract.js';

const opened: StoreShape[] = [];

describeStoreContract({
  name: 'in-memory',
  open: async () => {
    const store = openMemoryStore();
    opened.push(store);
    return store;
  },
  // Its data is one object in this process: every writer that shares the store shares that object.
  another: async (store) => store,
  anotherProcess: { unsupported: 'its data is an object in this process: no other process can open it' },
  reopen: { unsupported: 'nothing outlives it: its data lives in this process and goes with the store' },
  failingDisk: {
    unsupported: 'it has no disk: a commit is one synchronous step in memory, with no I/O that could fail',
  },
  dispose: async () => {
    for (const store of opened.splice(0)) await store.close();
  },
});
