import * as Context from 'effect/Context';
import * as Layer from 'effect/Layer';
import type { ServiceTier } from '../domain/serviceTier.js';
import type { Usage } from '../ports/ModelProvider.js';

/*
 * Prometheus metrics (product contract, section 10; docs/operations.md lists them): the service's shape here, its
 * prom-client implementation in prometheusMetrics.ts, the server's layer in metricsLayer.ts. One registry per app, not
 * prom-client's global one, so tests can run several apps in one process. Every label has a bounded set of values:
 * routes, statuses, methods, model ids from the config, plan and budget names, event types. Never a key, prompt,
 * response, email, account or request id (per-account figures are the usage API's: docs/decisions.md, issue 42).
 * Under `serve --processes N` each process's own figures are summed by the primary (scrapeSum.ts); the gauges read
 * from the store are read once by the process answering the scrape.
 *
 * The HTTP counters are on the API's hot path, so they are plain typed arrays indexed by route and status, turned
 * into Prometheus samples only when scraped: a call costs two `performance.now()` and a few array writes, no
 * allocation and no label hashing (prom-client's `observe` hashes its labels on every call).
 */

/** The routes HTTP calls are counted under (a bounded set; their labels are in prometheusMetrics.ts). */
export const HttpRoute = {
  submit: 0,
  poll: 1,
  other: 2,
  responsesCreate: 3,
  responsesRetrieve: 4,
  responsesCancel: 5,
  models: 6,
  chatCompletions: 7,
  files: 8,
  batches: 9,
  /** `GET /v1/ai` with `Prefer: wait`: held for seconds by design, so kept out of the polls' latency. */
  longPoll: 10,
} as const;
export type HttpRoute = (typeof HttpRoute)[keyof typeof HttpRoute];

/** Latency buckets (seconds): the contract's targets (5 ms poll, 10 ms submit p99) fall on bucket edges. */
export const httpLatencyBuckets = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const;

/** Queue entries read per scrape at most: a scrape must stay cheap whatever the backlog. */
export const queueScanLimit = 50_000;

/** The lists whose reads are counted. */
export type ListCall = 'files' | 'batches';

/** What an attempt came to, as counted: a bounded set. */
export type AttemptOutcome = 'completed' | 'failed' | 'timed_out' | 'expired' | 'cancelled' | 'taken_over';

/**
 * What one call of an upstream came to (contract 19): `ok` (it answered), `failed` (an error, a timeout or an answer
 * too large, and the attempt stayed on it), `failed_over` (it failed and the attempt moved to another upstream),
 * `cancelled` (the request was cancelled during the call).
 */
export type UpstreamCallOutcome = 'ok' | 'failed' | 'failed_over' | 'cancelled';

/** The long-lived calls of the process (contract 18), read at scrape time. */
export type LongCallsSource = {
  /** Held now, all accounts. */
  held(): number;
  /** The most the process holds at once (`http.maxLongCallsShare` of `http.maxConnections`). */
  readonly maxLongCalls: number;
  /** Refused since the start: an account at its plan's `maxOpenCalls`, or the process at its share. */
  refused(reason: 'account_limit' | 'process_share'): number;
};

export interface MetricsShape {
  /** One HTTP call answered: its route, status and when it began (`performance.now()`). Hot path: no allocation. */
  http(route: HttpRoute, status: number, startedAt: number): void;
  /** One durable batch: its command count, how long the commit took (s), and the events it appended. */
  committed(commands: number, seconds: number, outcomes: readonly unknown[]): void;
  /** A model call begins (an attempt). */
  attemptStarted(model: string): void;
  /** A request's first attempt began this long after its submit (contract 20: the queue wait, per model and tier). */
  queueWaited(model: string, tier: ServiceTier, seconds: number): void;
  /** A model call ended after `seconds` with this outcome; a completed one with the tokens it read and wrote, when
   * the model told them. */
  attemptEnded(model: string, outcome: AttemptOutcome, seconds: number, usage?: Usage): void;
  /** A call of one of a model's upstreams ended (counted only for upstreams of the config: bounded labels). */
  upstreamCalled(model: string, upstream: string, outcome: UpstreamCallOutcome): void;
  /** A call refused by the rate limiter. */
  rateLimited(plan: string, budget: string): void;
  /** A list call (`GET /v1/files`, `GET /v1/batches`) read `rows` rows of the store: its index entries and views. */
  listRead(list: ListCall, rows: number): void;
  /** Exposes the process's long-lived calls (held, their bound, refusals); the last source given is the one read. */
  watchLongCalls(source: LongCallsSource): void;
  /** The Prometheus text exposition of this app's metrics and the process's (a server of one process). */
  scrape(): Promise<string>;
  /**
   * This process's own figures (counters, histograms, its gauges, the Node process's metrics) as prom-client's JSON:
   * plain data, which the primary of `serve --processes N` sums over its processes (scrapeSum.ts).
   */
  ownFigures(): Promise<readonly unknown[]>;
  /** The text of the gauges read from the store (queues, upstreams): the same in every process, never summed. */
  storeFigures(): Promise<string>;
  readonly contentType: string;
}

export class Metrics extends Context.Service<Metrics, MetricsShape>()('airs/Metrics') {}

/** Metrics that count nothing (management commands: nothing scrapes them). */
export const noMetricsLayer = Layer.succeed(
  Metrics,
  Metrics.of({
    http: () => {},
    committed: () => {},
    attemptStarted: () => {},
    queueWaited: () => {},
    attemptEnded: () => {},
    upstreamCalled: () => {},
    rateLimited: () => {},
    listRead: () => {},
    watchLongCalls: () => {},
    scrape: async () => '',
    ownFigures: async () => [],
    storeFigures: async () => '',
    contentType: 'text/plain; version=0.0.4; charset=utf-8',
  }),
);
