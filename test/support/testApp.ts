import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Effect } from 'effect';
import { afterEach } from 'vitest';
import { listen as listenHttp } from '../../src/adapters/http/listen.js';
import { type Config, defaultConfig } from '../../src/config.js';
import type { PlanName } from '../../src/domain/plans.js';
import { type ClockShape, ManualClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { type App, type AppOptions, startApp } from '../../src/server.js';
import type { SyncReads } from '../../src/storage/syncReads.js';

export const tempDataDir = (label = 'airs-test') => mkdtempSync(join(tmpdir(), `${label}-`));

/** A test's config: anything it sets over the defaults (processing's fields one by one). */
export type TestConfig = Omit<Partial<Config>, 'processing'> & { readonly processing?: Partial<Config['processing']> };

export type TestAppOptions = {
  readonly config?: TestConfig;
  /** A manual clock by default, so tests move time themselves. Pass `systemClock` for real time. */
  readonly clock?: ClockShape;
  readonly dataDir?: string;
  readonly sweepIntervalMs?: number;
  readonly committerLimits?: AppOptions['committerLimits'];
  readonly storeLayer?: AppOptions['storeLayer'];
  /** Silent by default; tests that read the logs give their own. */
  readonly logger?: AppOptions['logger'];
  /** The disk's free space as the app reads it (default: the real one). */
  readonly readFreeBytes?: AppOptions['readFreeBytes'];
  /** How long a stream may stay silent before a keep-alive comment. */
  readonly streamKeepAliveMs?: number;
};

export type TestApp = App & {
  readonly config: Config;
  readonly clock: ClockShape;
  readonly dataDir: string;
  /** Creates an account with one key; returns both. */
  account(plan?: PlanName, email?: string): Promise<{ accountId: string; key: string; keyId: string }>;
  /** Calls the app in-process (no socket). */
  call(method: string, path: string, init?: CallInit): Promise<Response>;
  /** Closes the app; removes the data directory unless `keepData`. */
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

/** Starts the whole app on a fresh LMDB environment in a temporary directory. */
export const startTestApp = async (options: TestAppOptions = {}): Promise<TestApp> => {
  const dataDir = options.dataDir ?? tempDataDir();
  const defaults = defaultConfig({ dataDir });
  const config: Config = {
    ...defaults,
    ...options.config,
    processing: { ...defaults.processing, ...options.config?.processing },
  };
  const clock = options.clock ?? new ManualClock();
  const app = await startApp({
    config,
    logger: options.logger ?? silentLogger(),
    clock,
    sweepIntervalMs: options.sweepIntervalMs ?? 3_600_000,
    committerLimits: options.committerLimits,
    storeLayer: options.storeLayer,
    readFreeBytes: options.readFreeBytes,
    streamKeepAliveMs: options.streamKeepAliveMs,
  });
  return {
    ...app,
    config,
    clock,
    dataDir,
    account: async (plan = 'free', email = `user${++emails}-${Date.now()}@example.com`) => {
      const account = await Effect.runPromise(app.accounts.createAccount(email, plan));
      const key = await Effect.runPromise(app.accounts.createKey(account.accountId));
      return { accountId: account.accountId, key: key.key, keyId: key.id };
    },
    call: async (method, path, init) => app.http.request(`http://airs.test${path}`, requestInit(method, init)),
    stop: async ({ keepData = false } = {}) => {
      await app.close();
      if (!keepData) rmSync(dataDir, { recursive: true, force: true });
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
 * A test's view of what the app's store holds right now, read synchronously (the embedded stores can): for
 * assertions and `eventually` checks. The app itself reads through the asynchronous read model.
 */
export const syncReads = (app: { readonly store: StoreShape }): SyncReads => {
  const reads = (app.store as StoreShape & { readonly syncReads?: SyncReads }).syncReads;
  if (reads === undefined) throw new Error('this store has no synchronous reads');
  reads.refresh();
  return reads;
};
