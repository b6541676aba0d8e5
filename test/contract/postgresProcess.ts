import { openPostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import { serveStore } from './storeProcess.js';

/** The PostgreSQL store of another process on the database in argv (storeProcess.ts says how it is driven). */
const [url, mode] = process.argv.slice(2);
if (url === undefined) throw new Error('usage: postgresProcess.js <postgres:// URL> [--commit-once]');
await serveStore(await openPostgresStore(url), mode);
