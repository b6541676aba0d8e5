import * as Layer from 'effect/Layer';
import type { Logger } from 'pino';
import { freeBytesOf } from './adapters/lmdb/freeSpace.js';
import { webhookUrlProblem } from './adapters/webhooks/urlCheck.js';
import { AccountsLayer } from './app/Accounts.js';
import { AppConfig } from './app/AppConfig.js';
import { CommitterLayer, type CommitterLimits } from './app/Committer.js';
import { createLiveConfig, LiveConfig, type LiveConfigShape } from './app/LiveConfig.js';
import { type Metrics, noMetricsLayer } from './app/Metrics.js';
import type { ProviderFactory } from './app/Models.js';
import { PasswordHashingLayer } from './app/PasswordHashing.js';
import { StorageHealthLayer } from './app/StorageHealth.js';
import { WebhooksLayer } from './app/webhooks/WebhooksLayer.js';
import type { Config } from './config.js';
import { AppClock, type ClockShape, systemClock } from './ports/Clock.js';
import { Ids, type IdsShape, randomIds } from './ports/Ids.js';
import { LogLayer } from './ports/Logger.js';
import type { Store } from './ports/Store.js';
import { WebhookDestinations, type WebhookDestinationsShape } from './ports/WebhookDestinations.js';
import { configuredStoreLayer, usesPostgres } from './storeLocation.js';

/*
 * The layers under every use of the store: the server's (src/server.ts adds HTTP, workers and the sweeper) and the
 * management commands'. Kept apart from server.ts so that a CLI command loads none of the server's modules.
 */

export type AppOptions = {
  readonly config: Config;
  readonly logger: Logger;
  readonly clock?: ClockShape;
  readonly ids?: IdsShape;
  /** How often the expiry sweeper runs. */
  readonly sweepIntervalMs?: number;
  /** Bounds of the committer's queue and batches (tests make them small). */
  readonly committerLimits?: CommitterLimits;
  /** Another Store than the config names (tests wrap it, for example to make commits slow). */
  readonly storeLayer?: Layer.Layer<Store>;
  /** The free space of the data directory's disk (default: statfs of `config.dataDir`); tests give their own. */
  readonly readFreeBytes?: () => Promise<number>;
  /** How long a stream may stay silent before a keep-alive comment (default 15 s; tests make it short). */
  readonly streamKeepAliveMs?: number;
  /** How webhook URLs are checked on the network (default: the system's resolver); tests resolve names themselves. */
  readonly webhookDestinations?: WebhookDestinationsShape;
  /** The holder a reload applies to (server.ts makes it over `config`); none: one made here, never reloaded. */
  readonly liveConfig?: LiveConfigShape;
  /** Makes each model's provider (default: adapters/models/providers.ts); tests give one that records its calls. */
  readonly createProvider?: ProviderFactory;
};

/** The network check of webhook URLs: adapters/webhooks/urlCheck.ts, with the system's resolver. */
const networkDestinations: WebhookDestinationsShape = { problem: (url, policy) => webhookUrlProblem(url, policy) };

/**
 * The ground every service stands on: config, store, clock, ids, log, metrics, password hashing (one gate per
 * process: the thread pool it protects is the process's), and the health of the data directory (with
 * its free-space watch where `minFreeBytes` asks for one). Tests swap clock and ids via options.
 */
export const baseLayer = (
  options: AppOptions,
  minFreeBytes: number,
  metrics: Layer.Layer<Metrics, never, Store | AppClock | AppConfig> = noMetricsLayer,
  /** Whether a store on another machine is asked every second if it can be reached (a server's readiness). */
  watchStore = false,
) => {
  // AppConfig is the live config's view: `models` and `plans` read what the last reload applied (LiveConfig.ts).
  const live = options.liveConfig ?? createLiveConfig(options.config);
  const ground = Layer.mergeAll(
    Layer.succeed(LiveConfig, live),
    Layer.succeed(AppConfig, live.config),
    options.storeLayer ?? configuredStoreLayer(options.config),
    Layer.succeed(AppClock, options.clock ?? systemClock),
    Layer.succeed(Ids, options.ids ?? randomIds),
    LogLayer(options.logger),
    Layer.succeed(WebhookDestinations, options.webhookDestinations ?? networkDestinations),
    PasswordHashingLayer({
      concurrency: options.config.dashboard.hashingConcurrency,
      queue: options.config.dashboard.hashingQueue,
    }),
  );
  const health = StorageHealthLayer({
    // The free space that matters on PostgreSQL is the database server's, which it reports itself (a full disk
    // refuses the write, as on LMDB): there is no local directory to watch.
    minFreeBytes: usesPostgres(options.config) ? 0 : minFreeBytes,
    readFreeBytes: options.readFreeBytes ?? (() => freeBytesOf(options.config.dataDir)),
    watchStore,
  });
  // Metrics (Metrics.ts) sit under the committer, which counts its batches; the server gives MetricsLayer
  // (metricsLayer.ts), a management command counts nothing (and does not load prom-client).
  return CommitterLayer(options.committerLimits).pipe(
    Layer.provideMerge(health),
    Layer.provideMerge(metrics),
    Layer.provideMerge(ground),
  );
};

/**
 * What management commands need, and no more: no workers and no sweeper, which belong to the server alone, and no
 * free-space floor (an operator's command on a nearly full disk should still work).
 */
export const managementLayer = (options: AppOptions) =>
  Layer.mergeAll(AccountsLayer, WebhooksLayer).pipe(Layer.provideMerge(baseLayer(options, 0)));
