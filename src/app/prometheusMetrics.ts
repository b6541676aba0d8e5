import { Counter, collectDefaultMetrics, Gauge, Histogram, type MetricObjectWithValues, Registry } from 'prom-client';
import type { ModelConfig } from '../config.js';
import type { StoredEvent } from '../domain/events.js';
import type { ReadModel } from '../ports/Store.js';
import { type HttpRoute, httpLatencyBuckets, type LongCallsSource, type MetricsShape } from './Metrics.js';
import { queueGauges } from './queueGauges.js';
import { prometheusText } from './scrapeSum.js';
import { upstreamCollectors } from './upstreamMetrics.js';

/* The Metrics service on prom-client (see Metrics.ts): loaded by the server only. */

const httpRouteLabels = [
  { method: 'POST', route: '/v1/ai' },
  { method: 'GET', route: '/v1/ai' },
  { method: 'other', route: 'other' },
  { method: 'POST', route: '/v1/responses' },
  { method: 'GET', route: '/v1/responses/{id}' },
  { method: 'POST', route: '/v1/responses/{id}/cancel' },
  { method: 'GET', route: '/v1/models' },
  { method: 'POST', route: '/v1/chat/completions' },
  { method: 'any', route: '/v1/files' },
  { method: 'any', route: '/v1/batches' },
  { method: 'GET', route: '/v1/ai (Prefer: wait)' },
] as const;

/** Process metrics (CPU, memory, event loop lag, GC, handles) exist once per process: one registry shared by every
 * app, made on the first scrape (a management command never makes it). */
let processRegistry: Registry | undefined;
const processMetrics = (): Registry => {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
};

const statusSlots = 600;

/**
 * A counter and a latency histogram per HTTP route and status, kept in typed arrays and exposed through a custom
 * prom-client metric object (prom-client formats whatever `get()` returns).
 */
const httpCollectors = () => {
  const routes = httpRouteLabels.length;
  const bounds = httpLatencyBuckets;
  const counts = new Float64Array(routes * statusSlots);
  /** Per route: one count per bucket (not cumulative), then +Inf. */
  const buckets = new Float64Array(routes * (bounds.length + 1));
  const sums = new Float64Array(routes);
  const record = (route: HttpRoute, status: number, startedAt: number) => {
    const seconds = (performance.now() - startedAt) / 1000;
    const slot = route * statusSlots + (status >= 100 && status < statusSlots ? status : 0);
    counts[slot] = (counts[slot] as number) + 1;
    let bucket = 0;
    while (bucket < bounds.length && seconds > (bounds[bucket] as number)) bucket++;
    const cell = route * (bounds.length + 1) + bucket;
    buckets[cell] = (buckets[cell] as number) + 1;
    sums[route] = (sums[route] as number) + seconds;
  };
  const requests = {
    name: 'airs_http_requests_total',
    help: 'HTTP calls answered, by method, route and status (API routes and unknown paths; not probes or /metrics)',
    type: 'counter',
    aggregator: 'sum',
    get: (): MetricObjectWithValues<never> => {
      const values = [];
      for (let route = 0; route < routes; route++) {
        for (let status = 0; status < statusSlots; status++) {
          const value = counts[route * statusSlots + status] as number;
          if (value > 0)
            values.push({
              labels: { ...httpRouteLabels[route], status: status === 0 ? 'other' : String(status) },
              value,
            });
        }
      }
      return { name: requests.name, help: requests.help, type: 'counter', aggregator: 'sum', values } as never;
    },
  };
  const latency = {
    name: 'airs_http_request_duration_seconds',
    help: 'Time from the start of a call to its answer being built, by method and route',
    type: 'histogram',
    aggregator: 'sum',
    get: (): MetricObjectWithValues<never> => {
      const values = [];
      for (let route = 0; route < routes; route++) {
        const labels = httpRouteLabels[route];
        let cumulative = 0;
        for (let bucket = 0; bucket <= bounds.length; bucket++) {
          cumulative += buckets[route * (bounds.length + 1) + bucket] as number;
          const le = bucket < bounds.length ? (bounds[bucket] as number) : '+Inf';
          values.push({ metricName: `${latency.name}_bucket`, labels: { ...labels, le }, value: cumulative });
        }
        values.push({ metricName: `${latency.name}_sum`, labels, value: sums[route] as number });
        values.push({ metricName: `${latency.name}_count`, labels, value: cumulative });
      }
      return { name: latency.name, help: latency.help, type: 'histogram', aggregator: 'sum', values } as never;
    },
  };
  return { record, requests, latency };
};

/**
 * A counter whose increments are tallied in a map keyed by its label values, and handed to prom-client at scrape time:
 * prom-client hashes the labels of every `inc`, which costs more than the rest of an echo attempt's bookkeeping.
 */
const tallied = (
  registry: Registry,
  config: { readonly name: string; readonly help: string; readonly labelNames: readonly string[] },
) => {
  const tallies = new Map<string, { readonly values: readonly string[]; count: number }>();
  new Counter({
    ...config,
    registers: [registry],
    collect() {
      this.reset();
      for (const { values, count } of tallies.values())
        this.inc(Object.fromEntries(config.labelNames.map((label, i) => [label, values[i] as string])), count);
    },
  });
  return {
    /** Adds `amount` under the label values `first` (and `second`, for a counter of two labels). */
    add(amount: number, first: string, second?: string) {
      const key = second === undefined ? first : `${first}\u0000${second}`;
      const tally = tallies.get(key);
      if (tally === undefined)
        tallies.set(key, { values: second === undefined ? [first] : [first, second], count: amount });
      else tally.count += amount;
    },
  };
};

export type MetricsSources = {
  /** The store's reads, for the queue gauges (read at scrape time, at most `queueScanLimit` entries). */
  readonly reads?: ReadModel;
  readonly now?: () => number;
  /** The configured models: each has a queue series from the first scrape (0 when empty), so alerts see it. */
  readonly modelIds?: readonly string[];
  /** The configured models: their upstreams' series (contract 19), labelled by the config's models × upstreams only. */
  readonly models?: readonly ModelConfig[];
};

export const createMetrics = (sources: MetricsSources = {}): MetricsShape => {
  /** This process's own figures: under `serve --processes N`, summed over the processes (scrapeSum.ts). */
  const registry = new Registry();
  /** Gauges read from the store at scrape time: the same in every process, read by the one answering the scrape. */
  const storeRegistry = new Registry();
  const http = httpCollectors();
  registry.registerMetric(http.requests as never);
  registry.registerMetric(http.latency as never);

  const reads = sources.reads;
  const now = sources.now ?? Date.now;
  const upstreamCalled = upstreamCollectors(registry, storeRegistry, sources.models ?? [], reads, now);
  queueGauges(storeRegistry, reads, now, sources.modelIds ?? []);

  const attempts = tallied(registry, {
    name: 'airs_processing_attempts_total',
    help: 'Model calls begun (attempts), by model',
    labelNames: ['model'],
  });
  const outcomes = tallied(registry, {
    name: 'airs_processing_outcomes_total',
    help: 'Model calls ended, by model and outcome (completed, failed, timed_out, expired: the result came too late, cancelled: the request was cancelled)',
    labelNames: ['model', 'outcome'],
  });
  const tokens = tallied(registry, {
    name: 'airs_tokens_total',
    help: 'Tokens of completed requests, by model and direction (input: read by the model, output: written); the upstream’s figures for openai models, words for echo',
    labelNames: ['model', 'direction'],
  });
  const processing = new Histogram({
    name: 'airs_processing_duration_seconds',
    help: 'Duration of model calls, by model',
    labelNames: ['model'],
    buckets: [0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers: [registry],
  });
  const queueWait = new Histogram({
    name: 'airs_queue_wait_seconds',
    help: 'Time from a submit to its first attempt, by model and service tier (contract 20)',
    labelNames: ['model', 'tier'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
    registers: [registry],
  });
  /** Each model and tier's series, found once (prom-client hashes labels on every `observe` with labels). */
  const queueWaitOf = new Map<string, ReturnType<typeof queueWait.labels>>();
  const expired = new Counter({
    name: 'airs_requests_expired_total',
    help: 'Requests expired (RequestExpired appended)',
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'airs_rate_limit_refusals_total',
    help: 'API calls refused by the rate limiter, by plan and budget',
    labelNames: ['plan', 'budget'],
    registers: [registry],
  });
  const listRows = tallied(registry, {
    name: 'airs_list_rows_read_total',
    help: 'Rows of the store (index entries and views) read by list calls, by list (files, batches)',
    labelNames: ['list'],
  });
  /** Read at scrape time: nothing is counted on the calls' path but the open calls' own counters. */
  let longCalls: LongCallsSource | undefined;
  new Gauge({
    name: 'airs_long_calls_open',
    help: 'Long-lived calls (streams, creates waiting for their answer) the server holds now, all accounts (summed over its processes)',
    aggregator: 'sum',
    registers: [registry],
    collect() {
      this.set(longCalls?.held() ?? 0);
    },
  });
  new Gauge({
    name: 'airs_long_calls_max',
    help: 'The most long-lived calls the server holds at once (http.maxLongCallsShare of http.maxConnections, summed over its processes)',
    aggregator: 'sum',
    registers: [registry],
    collect() {
      if (longCalls !== undefined) this.set(longCalls.maxLongCalls);
    },
  });
  new Counter({
    name: 'airs_long_calls_refused_total',
    help: 'Long-lived calls refused, by reason: account_limit (429: the account holds its plan’s maxOpenCalls), process_share (503: the process holds its share of connections)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      this.reset();
      for (const reason of ['account_limit', 'process_share'] as const)
        this.inc({ reason }, longCalls?.refused(reason) ?? 0);
    },
  });
  const batchSize = new Histogram({
    name: 'airs_commit_batch_size',
    help: 'Commands per durable write (committer batch)',
    buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
    registers: [registry],
  });
  const commitLatency = new Histogram({
    name: 'airs_commit_duration_seconds',
    help: 'Time from handing a batch to the store until it is durable',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [registry],
  });
  /** Events appended, by type: counted per batch into a small map, handed to prom-client at scrape time. */
  const appended = new Map<string, number>();
  new Counter({
    name: 'airs_events_appended_total',
    help: 'Events appended to the log, by type',
    labelNames: ['type'],
    registers: [registry],
    collect() {
      this.reset();
      for (const [type, count] of appended) this.inc({ type }, count);
    },
  });

  const committed: MetricsShape['committed'] = (commands, seconds, results) => {
    batchSize.observe(commands);
    commitLatency.observe(seconds);
    for (const result of results) {
      const events = (result as { events?: readonly StoredEvent[] } | undefined)?.events;
      if (events === undefined) continue;
      for (const event of events) {
        appended.set(event.type, (appended.get(event.type) ?? 0) + 1);
        if (event.type === 'RequestExpired') expired.inc();
      }
    }
  };

  return {
    http: http.record,
    committed,
    attemptStarted: (model) => attempts.add(1, model),
    queueWaited: (model, tier, seconds) => {
      const key = `${model}\u0000${tier}`;
      let series = queueWaitOf.get(key);
      if (series === undefined) {
        series = queueWait.labels(model, tier);
        queueWaitOf.set(key, series);
      }
      series.observe(seconds);
    },
    attemptEnded: (model, outcome, seconds, usage) => {
      outcomes.add(1, model, outcome);
      processing.observe({ model }, seconds);
      if (usage !== undefined) {
        tokens.add(usage.inputTokens, model, 'input');
        tokens.add(usage.outputTokens, model, 'output');
      }
    },
    upstreamCalled,
    rateLimited: (plan, budget) => refusals.inc({ plan, budget }),
    listRead: (list, rows) => listRows.add(rows, list),
    watchLongCalls: (source) => {
      longCalls = source;
    },
    scrape: async () =>
      prometheusText(
        `${await registry.metrics()}\n${await storeRegistry.metrics()}\n${await processMetrics().metrics()}`,
      ),
    ownFigures: async () => [...(await registry.getMetricsAsJSON()), ...(await processMetrics().getMetricsAsJSON())],
    storeFigures: async () => prometheusText(await storeRegistry.metrics()),
    contentType: registry.contentType,
  };
};
