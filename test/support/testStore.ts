import { rmSync } from 'node:fs';
import { Effect, Layer } from 'effect';
import { type LmdbStore, openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { type MemoryStore, MemoryStoreLayer, openMemoryStore } from '../../src/adapters/memory/MemoryStore.js';
import { type Config, webhookRetentionMs } from '../../src/config.js';
import { Store, type StoreShape } from '../../src/ports/Store.js';
import { configuredStoreLayer } from '../../src/storeLocation.js';

export type { MemoryStore };

/**
 * Which store a test app runs on. App tests test the app through the store port, so they run on the memory store
 * unless they choose: `STORE=lmdb` or `STORE=postgres` in the environment runs the same tests on another store (by
 * hand: `STORE=postgres npx vitest run --dir test test/app`). A test about LMDB itself (files on disk, restarts of
 * the process, its layout) says `store: 'lmdb'`.
 */
export type StoreKind = 'memory' | 'lmdb' | 'postgres';

const storeKinds: readonly StoreKind[] = ['memory', 'lmdb', 'postgres'];

/** The store of a test that does not choose: `STORE`, or memory. */
export const defaultStoreKind = (): StoreKind => {
  const named = process.env.STORE || 'memory';
  if (!storeKinds.includes(named as StoreKind))
    throw new Error(`STORE=${named} names no store: use one of ${storeKinds.join(', ')}`);
  return named as StoreKind;
};

/** A test app's store, and where it lives: enough to open it again after the app stopped (a restart). */
export type TestStore =
  | { readonly kind: 'memory'; readonly memory: MemoryStore }
  | { readonly kind: 'lmdb'; readonly dataDir: string }
  | { readonly kind: 'postgres'; readonly url: string }
  /** The test's own store (its `storeLayer`, or the database its config names): the test makes and removes it. */
  | { readonly kind: 'own' };

/** A new, empty store of `kind` (LMDB in `dataDir`; PostgreSQL: a new database on the tests' cluster). */
export const createTestStore = async (kind: StoreKind, dataDir: string, config: Config): Promise<TestStore> => {
  switch (kind) {
    case 'memory':
      return { kind, memory: openMemoryStore({ webhookRetentionMs: webhookRetentionMs(config.webhooks) }) };
    case 'lmdb':
      return { kind, dataDir };
    case 'postgres': {
      const { testCluster } = await import('./postgres.js');
      return { kind, url: await (await testCluster()).createDatabase() };
    }
  }
};

/** The app's config on this store: PostgreSQL is named by `store.url`, as an operator names it. */
export const configOn = (store: TestStore, config: Config): Config =>
  store.kind === 'postgres' ? { ...config, store: { url: store.url, urlFrom: 'the tests (STORE)' } } : config;

/** The store's layer where the config does not name it (memory); LMDB and PostgreSQL open as the config says. */
export const storeLayerOf = (store: TestStore): Layer.Layer<Store> | undefined =>
  store.kind === 'memory' ? MemoryStoreLayer(store.memory) : undefined;

/** The store as the app sees it through `wrap` (a test's slow or failing store), whichever store it is. */
export const wrappedStoreLayer = (
  store: TestStore,
  config: Config,
  wrap: (store: StoreShape) => StoreShape,
): Layer.Layer<Store> =>
  Layer.effect(Store, Effect.map(Store, wrap)).pipe(Layer.provide(storeLayerOf(store) ?? configuredStoreLayer(config)));

/** Removes what the store kept: LMDB's files, the PostgreSQL database (memory goes with the process). */
export const removeTestStore = async (store: TestStore): Promise<void> => {
  if (store.kind === 'lmdb') rmSync(store.dataDir, { recursive: true, force: true });
  if (store.kind === 'postgres') await (await (await import('./postgres.js')).testCluster()).dropDatabase(store.url);
};

/**
 * A store opened by itself, with no app around it, for a test of one part the app wires (the worker pool, token
 * budgets): memory, or LMDB in `dataDir`. The caller closes it.
 */
export function openStoreOf(kind: 'memory'): MemoryStore;
export function openStoreOf(kind: 'lmdb', dataDir: string): LmdbStore;
export function openStoreOf(kind: 'memory' | 'lmdb', dataDir?: string): MemoryStore | LmdbStore {
  if (kind === 'memory') return openMemoryStore();
  if (dataDir === undefined) throw new Error('an LMDB store needs its data directory');
  return openLmdbStore(dataDir);
}
