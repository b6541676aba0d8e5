import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as ManagedRuntime from 'effect/ManagedRuntime';
import type { H3 } from 'h3';
import { adminAuthLimits, createAdminGuard } from './adapters/http/admin/adminGuard.js';
import { createHttpApp } from './adapters/http/app.js';
import { batchEndpoints } from './adapters/http/openai/batchEndpoints.js';
import { createOpenCalls, type OpenCallsShape } from './adapters/http/openCalls.js';
import { createTraffic, type Traffic } from './adapters/http/traffic.js';
import { createProvider } from './adapters/models/providers.js';
import { httpWebhookTransport } from './adapters/webhooks/transport.js';
import { Accounts, AccountsLayer, type AccountsShape } from './app/Accounts.js';
import { Auth, AuthLayer, type AuthShape } from './app/Auth.js';
import { createAdminAccounts } from './app/adminAccounts.js';
import { BatchEndpoints } from './app/batches/BatchEndpoints.js';
import { Batches, BatchesLayer, type BatchesShape } from './app/batches/Batches.js';
import { BatchRunner, BatchRunnerLayer, type BatchRunnerShape } from './app/batches/BatchRunner.js';
import { Files, FilesLayer, type FilesShape } from './app/batches/Files.js';
import { LineReaderLayer } from './app/batches/lineInput.js';
import { Committer, type CommitterShape } from './app/Committer.js';
import { createLiveConfig, type LiveConfigShape } from './app/LiveConfig.js';
import { LiveOutput, LiveOutputLayer, type LiveOutputShape } from './app/LiveOutput.js';
import { Metrics, type MetricsShape } from './app/Metrics.js';
import { ModelsLayer } from './app/Models.js';
import { MetricsLayer } from './app/metricsLayer.js';
import { GoneOwners, GoneOwnersLayer, type GoneOwnersShape } from './app/processing/goneOwners.js';
import { Processor, ProcessorLayer, type ProcessorShape } from './app/processing/Processor.js';
import { RateLimiter, RateLimiterLayer, type RateLimiterShape } from './app/RateLimiter.js';
import { Requests, RequestsLayer, type RequestsShape } from './app/Requests.js';
import { Sessions, SessionsLayer, type SessionsShape } from './app/Sessions.js';
import { StorageHealth, type StorageHealthShape } from './app/StorageHealth.js';
import { Sweeper, SweeperLayer, type SweeperShape } from './app/Sweeper.js';
import { createThrottle } from './app/throttle.js';
import { createUpstreamStates, type UpstreamStates, watchedProvider } from './app/upstreamStates.js';
import { WebhookSender, WebhookSenderLayer, type WebhookSenderShape } from './app/webhooks/WebhookSender.js';
import { Webhooks, type WebhooksShape } from './app/webhooks/Webhooks.js';
import { WebhooksLayer } from './app/webhooks/WebhooksLayer.js';
import { type AppOptions, baseLayer } from './baseLayer.js';
import { systemClock } from './ports/Clock.js';
import { Ids } from './ports/Ids.js';
import { Store, type StoreShape } from './ports/Store.js';

export type { AppOptions } from './baseLayer.js';

/** The whole service: everything the HTTP adapter calls, plus the worker pool and the expiry sweeper. */
export const appLayer = (options: AppOptions, upstreams?: UpstreamStates) => {
  const base = baseLayer(options, options.config.storage.minFreeBytes, MetricsLayer, true);
  return Layer.mergeAll(RequestsLayer, SessionsLayer, FilesLayer, BatchesLayer, BatchRunnerLayer).pipe(
    Layer.provideMerge(ProcessorLayer),
    // Batches' lines, read from their input files when their attempts start (app/batches/lineInput.ts).
    Layer.provideMerge(LineReaderLayer),
    Layer.provideMerge(
      Layer.mergeAll(
        AuthLayer,
        RateLimiterLayer,
        ModelsLayer((model) => {
          const provider = (options.createProvider ?? createProvider)(model);
          return upstreams === undefined || model.provider !== 'openai'
            ? provider
            : watchedProvider(provider, model.id, upstreams);
        }),
        AccountsLayer,
        WebhooksLayer,
        SweeperLayer(options.sweepIntervalMs),
        // Every serving process sends webhooks: leases decided in the store's write keep one sender per attempt.
        WebhookSenderLayer(
          httpWebhookTransport({
            allowHttp: options.config.webhooks.allowHttp,
            allowPrivateNetworks: options.config.webhooks.allowPrivateNetworks,
          }),
        ),
        LiveOutputLayer,
        GoneOwnersLayer,
        Layer.succeed(BatchEndpoints, batchEndpoints),
      ),
    ),
    Layer.provideMerge(base),
  );
};

/** The running application without a socket: its HTTP app (for `app.request()` and for serving) and services. */
export type App = {
  readonly http: H3;
  readonly auth: AuthShape;
  readonly rateLimiter: RateLimiterShape;
  readonly requests: RequestsShape;
  readonly accounts: AccountsShape;
  /** An account's webhook endpoints and deliveries (issue 30). */
  readonly webhooks: WebhooksShape;
  readonly processor: ProcessorShape;
  /** Takes up the leases of this data directory's processes that no longer exist (at start, and when told one died). */
  readonly goneOwners: GoneOwnersShape;
  readonly sweeper: SweeperShape;
  /** This process's webhook sender (the outbox's deliveries due, leased per attempt). */
  readonly webhookSender: WebhookSenderShape;
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly storageHealth: StorageHealthShape;
  readonly sessions: SessionsShape;
  /** Prometheus metrics (`GET /metrics`). */
  readonly metrics: MetricsShape;
  /** Text of attempts in flight, for callers streaming them. */
  readonly live: LiveOutputShape;
  /** OpenAI's Files and Batches APIs, and this process's share of the batches' housekeeping (contract 16). */
  readonly files: FilesShape;
  readonly batches: BatchesShape;
  readonly batchRunner: BatchRunnerShape;
  /** Calls being answered, and when the last one came while draining. */
  readonly traffic: Traffic;
  /** Each `openai` model's upstream as last seen (by a check, or by its calls), for `/readyz`. */
  readonly upstreams: UpstreamStates;
  /** The long-lived calls (streams, waiting creates) held now, per account and in all (contract 18). */
  readonly openCalls: Pick<OpenCallsShape, 'held' | 'heldBy' | 'maxLongCalls'>;
  /** The config in force; a reload applies a new file's `models` and `plans` to it (adapters/cli/configReload.ts). */
  readonly liveConfig: LiveConfigShape;
  /** From now on every call answers 503 (the server is draining). */
  stopAccepting(): void;
  /**
   * Starts to stop: every new call answers 503, the pool starts nothing new; resolves `true` once the calls and model
   * work in flight are done and no call has come for a second, or `false` when `graceMs` ran out first.
   */
  drain(graceMs: number): Promise<boolean>;
  /** Stops taking calls, lets work in flight settle, and closes the store. */
  close(): Promise<void>;
};

/** A draining server keeps listening until no call has come for this long (clients still sending get their 503). */
const drainQuietMs = 1_000;

export type ServerOptions = AppOptions & {
  /** Under `serve --processes N`: the sum of every process's metrics (ipc/metricsAsker.ts), which `/metrics` answers. */
  readonly gatherMetrics?: () => Promise<string>;
};

export const startApp = async (given: ServerOptions): Promise<App> => {
  // Every read of `options.config` below goes through the live config: a reload is seen where models and plans are read.
  const liveConfig = given.liveConfig ?? createLiveConfig(given.config);
  const options: AppOptions = { ...given, config: liveConfig.config, liveConfig };
  const upstreams = createUpstreamStates(
    options.config.models.filter((model) => model.provider === 'openai').map((model) => model.id),
  );
  const runtime = ManagedRuntime.make(appLayer(options, upstreams));
  const services = await runtime.runPromise(
    Effect.gen(function* () {
      return {
        auth: yield* Auth,
        rateLimiter: yield* RateLimiter,
        requests: yield* Requests,
        accounts: yield* Accounts,
        webhooks: yield* Webhooks,
        processor: yield* Processor,
        goneOwners: yield* GoneOwners,
        sweeper: yield* Sweeper,
        webhookSender: yield* WebhookSender,
        store: yield* Store,
        committer: yield* Committer,
        storageHealth: yield* StorageHealth,
        sessions: yield* Sessions,
        metrics: yield* Metrics,
        live: yield* LiveOutput,
        files: yield* Files,
        batches: yield* Batches,
        batchRunner: yield* BatchRunner,
        ids: yield* Ids,
      };
    }),
  );
  let accepting = true;
  // Aborted once the server starts to stop: the calls it holds for a while (long polls) answer at once.
  const stopping = new AbortController();
  const stopAccepting = () => {
    accepting = false;
    stopping.abort();
  };
  const traffic = createTraffic();
  const openCalls = createOpenCalls({
    get plans() {
      return options.config.plans;
    },
    maxConnections: options.config.http.maxConnections,
    maxLongCallsShare: options.config.http.maxLongCallsShare,
    retryAfterSeconds: options.config.pollIntervalSeconds,
  });
  services.metrics.watchLongCalls(openCalls);
  const http: H3 = createHttpApp({
    ...services,
    log: options.logger,
    maxBodyBytes: options.config.maxBodyBytes,
    jsonBounds: { maxDepth: options.config.maxJsonDepth, maxValues: options.config.maxJsonValues },
    pollIntervalSeconds: options.config.pollIntervalSeconds,
    get models() {
      return options.config.models;
    },
    corsOrigins: options.config.cors.allowedOrigins,
    streamKeepAliveMs: options.streamKeepAliveMs,
    accepting: () => accepting,
    stopping: stopping.signal,
    maxPollWaitSeconds: options.config.http.maxPollWaitSeconds,
    traffic,
    openCalls,
    readiness: services.storageHealth.problem,
    upstreams: upstreams.all,
    metrics: { metrics: services.metrics, token: options.config.metrics?.token, gather: given.gatherMetrics },
    admin: {
      accounts: createAdminAccounts({
        reads: services.store.reads,
        committer: services.committer,
        clock: options.clock ?? systemClock,
        ids: services.ids,
        plans: () => options.config.plans,
      }),
      guard: createAdminGuard({
        reads: services.store.reads,
        throttle: createThrottle(services.store.throttle, options.clock ?? systemClock, 'admin', adminAuthLimits),
      }),
      reads: services.store.reads,
    },
    dashboard: {
      sessions: services.sessions,
      accounts: services.accounts,
      store: services.store,
      rateLimiter: services.rateLimiter,
      webhooks: services.webhooks,
      batches: services.batches,
      config: options.config,
      clock: options.clock ?? systemClock,
      log: options.logger,
      accepting: () => accepting,
    },
  });
  return {
    http,
    ...services,
    traffic,
    openCalls,
    upstreams,
    liveConfig,
    stopAccepting,
    drain: async (graceMs) => {
      stopAccepting();
      services.processor.stopTakingWork();
      services.webhookSender.stopTakingWork();
      const quietMs = Math.min(drainQuietMs, graceMs);
      const deadline = Date.now() + graceMs;
      for (;;) {
        const now = Date.now();
        const settled =
          traffic.inFlight === 0 && services.processor.inFlight() === 0 && services.webhookSender.inFlight() === 0;
        if (settled && now - traffic.lastArrivalAt >= quietMs) return true;
        if (now >= deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    },
    close: async () => {
      stopAccepting();
      await runtime.dispose();
    },
  };
};
