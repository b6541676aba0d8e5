import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { serveStore } from './storeProcess.js';

/** The LMDB store of another process on the data directory in argv (storeProcess.ts says how it is driven). */
const [dataDir, mode] = process.argv.slice(2);
if (dataDir === undefined) throw new Error('usage: lmdbProcess.js <data directory> [--commit-once]');
await serveStore(openLmdbStore(dataDir), mode);
