import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { LmdbStoreLayer } from './adapters/lmdb/LmdbStore.js';
import { redactedUrl } from './adapters/postgres/redactedUrl.js';
import { type Config, webhookRetentionMs } from './config.js';
import type { Store, StoreShape } from './ports/Store.js';

/*
 * Where the store is: LMDB under `dataDir` (the default: nothing else to run), or the PostgreSQL database that
 * `store.url` / `AIRS_DATABASE_URL` / `--database-url` names (contract 14). The PostgreSQL adapter and its client are
 * loaded only when one is named, so a command on LMDB starts as fast as before.
 */

/** What a line names the store by: the data directory, or the database (no password). */
export const storeName = (config: Config): string =>
  config.store.url === undefined
    ? `data directory ${config.dataDir} (from ${config.dataDirFrom})`
    : `database ${redactedUrl(config.store.url)} (from ${config.store.urlFrom})`;

/** The fields of a log line that name the store. */
export const storeLogFields = (config: Config): Record<string, string> =>
  config.store.url === undefined ? { dataDir: config.dataDir } : { database: redactedUrl(config.store.url) };

export const usesPostgres = (config: Config): boolean => config.store.url !== undefined;

/** The store the config names, as a layer: opened when the layer is built, closed with its scope. */
export const configuredStoreLayer = (config: Config): Layer.Layer<Store> => {
  const url = config.store.url;
  if (url === undefined)
    return LmdbStoreLayer(config.dataDir, { webhookRetentionMs: webhookRetentionMs(config.webhooks) });
  return Layer.unwrap(
    Effect.promise(async () =>
      (await import('./adapters/postgres/PostgresStore.js')).PostgresStoreLayer(url, {
        webhookRetentionMs: webhookRetentionMs(config.webhooks),
      }),
    ),
  );
};

/** The store the config names, opened for a command that uses it directly (replay); the caller closes it. */
export const openConfiguredStore = async (config: Config): Promise<StoreShape> => {
  const url = config.store.url;
  if (url === undefined)
    return (await import('./adapters/lmdb/LmdbStore.js')).openLmdbStore(config.dataDir, {
      webhookRetentionMs: webhookRetentionMs(config.webhooks),
    });
  return (await import('./adapters/postgres/PostgresStore.js')).openPostgresStore(url, {
    maxConnections: 2,
    webhookRetentionMs: webhookRetentionMs(config.webhooks),
  });
};
