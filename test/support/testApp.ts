import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Effect } from 'effect';
import { afterEach } from 'vitest';
import { listen as listenHttp } from '../../src/adapters/http/listen.js';
import { type Config, defaultConfig } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { PlanName } from '../../src/domain/plans.js';
import { type ClockShape, ManualClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { type App, type AppOptions, startApp } from '../../src/server.js';
import type { SyncReads } from '../../src/storage/syncReads.js';
import {
  configOn,
  createTestStore,
  defaultStoreKind,
  removeTestStore,
  type StoreKind,
  storeLayerOf,
  type TestStore,
  wrappedStoreLayer,
} from './testStore.js';

export const tempDataDir = (label = 'airs-test') => mkdtempSync(join(tmpdir(), `${label}-`));

/** A test's config: anything it sets over the defaults (processing's fields one by one). */
export type TestConfig = Omit<Partial<Config>, 'processing'> & { readonly processing?: Partial<Config['processing']> };

export type TestAppOptions = {
  readonly config?: TestConfig;
  /** A manual clock by default, so tests move time themselves. Pass `systemClock` for real time. */
  readonly clock?: ClockShape;
  /**
   * The store to run on (testStore.ts): memory unless `STORE` says otherwise, or LMDB where `dataDir` is given (a
   * directory given is where the store lives).
   */
  readonly store?: StoreKind;
  /**
   * The store of another app: a restart of the server on the same store (after `stop({ keepData: true })`), or a
   * second server on it.
   */
  readonly storeOf?: TestApp;
  /** LMDB's directory (a new temporary one by default; on the other stores only the free-space watch reads it). */
  readonly dataDir?: string;
  readonly sweepIntervalMs?: number;
  readonly committerLimits?: AppOptions['committerLimits'];
  /** A store layer of the test's own, instead of the one `store` names. */
  readonly storeLayer?: AppOptions['storeLayer'];
  /** The store the app uses, seen through this (a slow or failing store), whichever `store` is. */
  readonly wrapStore?: (store: StoreShape) => StoreShape;
  /** Silent by default; tests that read the logs give their own. */
  readonly logger?: AppOptions['logger'];
  /** Makes each model's provider (default: the real ones, adapters/models/providers.ts). */
  readonly createProvider?: AppOptions['createProvider'];
  /** The disk's free space as the app reads it (default: the real one). */
  readonly readFreeBytes?: AppOptions['readFreeBytes'];
  /** How long a stream may stay silent before a keep-alive comment. */
  readonly streamKeepAliveMs?: number;
};

export type TestApp = App & {
  readonly config: Config;
  readonly clock: ClockShape;
  readonly dataDir: string;
  /** The store it runs on, and where that lives (for `storeOf`). */
  readonly testStore: TestStore;
  /** Creates an account with one key; returns both. */
  account(plan?: PlanName, email?: string): Promise<{ accountId: string; key: string; keyId: string }>;
  /** Calls the app in-process (no socket). */
  call(method: string, path: string, init?: CallInit): Promise<Response>;
  /** Closes the app; removes the data directory and the store's data unless `keepData`. */
  stop(options?: { keepData?: boolean }): Promise<void>;
};

export type CallInit = { readonly key?: string; readonly body?: unknown; readonly headers?: Record<string, string> };

let emails = 0;

export const requestInit = (method: string, init: CallInit = {}): RequestInit => {
  const headers: Record<string, string> = { ...init.headers };
  if (init.key !== undefined) headers.authorization = `Bearer ${init.key}`;
  let body: string | undefined;
  if (init.body !== undefined) {
    body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
    headers['content-type'] ??= 'application/json';
  }
  return { method, headers, body };
};

/** The store a new app runs on: the reopened app's, or a new one of the kind asked for. */
const storeFor = (options: TestAppOptions, dataDir: string, config: Config): Promise<TestStore> => {
  if (options.storeOf !== undefined) return Promise.resolve(options.storeOf.testStore);
  // A store the test opens itself: its layer, or a database its config names.
  const ownStore = options.storeLayer !== undefined || options.config?.store?.url !== undefined;
  if (ownStore && options.store === undefined) return Promise.resolve({ kind: 'own' });
  const kind = options.store ?? (options.dataDir === undefined ? defaultStoreKind() : 'lmdb');
  return createTestStore(kind, dataDir, config);
};

/** Starts the whole app on a fresh store (see `TestAppOptions.store`), with a temporary data directory. */
export const startTestApp = async (options: TestAppOptions = {}): Promise<TestApp> => {
  const dataDir = options.dataDir ?? options.storeOf?.dataDir ?? tempDataDir();
  const defaults = defaultConfig({ dataDir });
  const asked: Config = {
    ...defaults,
    ...options.config,
    processing: { ...defaults.processing, ...options.config?.processing },
  };
  const testStore = await storeFor(options, dataDir, asked);
  const config = configOn(testStore, asked);
  const clock = options.clock ?? new ManualClock();
  const app = await startApp({
    config,
    logger: options.logger ?? silentLogger(),
    clock,
    sweepIntervalMs: options.sweepIntervalMs ?? 3_600_000,
    committerLimits: options.committerLimits,
    storeLayer:
      options.storeLayer ??
      (options.wrapStore === undefined
        ? storeLayerOf(testStore)
        : wrappedStoreLayer(testStore, config, options.wrapStore)),
    readFreeBytes: options.readFreeBytes,
    streamKeepAliveMs: options.streamKeepAliveMs,
    createProvider: options.createProvider,
  });
  return {
    ...app,
    config,
    clock,
    dataDir,
    testStore,
    account: async (plan = 'free', email = `user${++emails}-${Date.now()}@example.com`) => {
      const account = await Effect.runPromise(app.accounts.createAccount(email, plan));
      const key = await Effect.runPromise(app.accounts.createKey(account.accountId));
      return { accountId: account.accountId, key: key.key, keyId: key.id };
    },
    call: async (method, path, init) => app.http.request(`http://airs.test${path}`, requestInit(method, init)),
    stop: async ({ keepData = false } = {}) => {
      await app.close();
      if (keepData) return;
      await removeTestStore(testStore);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
};

/** Serves an app on a real socket on 127.0.0.1 with a free port. */
export const listen = async (app: App & { readonly config?: Config }) => {
  const { maxBodyBytes, http: limits } = app.config ?? defaultConfig();
  const { server, url } = await listenHttp(app.http, { port: 0, hostname: '127.0.0.1', maxBodyBytes, limits });
  return {
    url,
    close: () => server.close(true),
    /** The connections the server holds now (those a peer left half-open included). */
    connections: () =>
      new Promise<number>((resolve, reject) =>
        server.node?.server?.getConnections((error, count) => (error ? reject(error) : resolve(count))),
      ),
  };
};

/** Polls `check` until it returns a value or `timeoutMs` passes. */
export const eventually = async <A>(
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs = 5_000,
): Promise<A> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

/**
 * Apps for one test file: each call starts one; after each test, the apps it started are stopped and their data
 * removed.
 */
export const testApps = () => {
  const apps: TestApp[] = [];
  afterEach(async () => {
    for (const app of apps.splice(0)) await app.stop();
  });
  return async (options?: TestAppOptions): Promise<TestApp> => {
    const app = await startTestApp(options);
    apps.push(app);
    return app;
  };
};

/**
 * Apps for one test file served on real sockets: each call starts one (`testApps`) and listens on 127.0.0.1; after
 * each test its sockets are closed, then the app is stopped and its data removed.
 */
export const servedTestApps = () => {
  const startApp = testApps();
  const servers: Array<{ close: () => unknown }> = [];
  // Registered after testApps' hook, so run before it (vitest runs afterEach hooks as a stack).
  afterEach(() => {
    for (const served of servers.splice(0)) served.close();
  });
  return async (options?: TestAppOptions) => {
    const app = await startApp(options);
    const served = await listen(app);
    servers.push(served);
    return { app, served };
  };
};

/** The store's log, in order (from `fromSeq`), read through the port: on every store. */
export const loggedEvents = async (app: { readonly store: StoreShape }, fromSeq?: number): Promise<StoredEvent[]> => {
  const events: StoredEvent[] = [];
  for await (const event of app.store.reads.events(fromSeq)) events.push(event);
  return events;
};

/**
 * What an embedded store (LMDB, memory) holds right now, read synchronously. Tests read through the port
 * (`app.store.reads`, `loggedEvents`), which every store answers; this is left for those not moved yet.
 */
export const syncReads = (app: { readonly store: StoreShape }): SyncReads => {
  const reads = (app.store as StoreShape & { readonly syncReads?: SyncReads }).syncReads;
  if (reads === undefined) throw new Error('this store has no synchronous reads');
  reads.refresh();
  return reads;
};
