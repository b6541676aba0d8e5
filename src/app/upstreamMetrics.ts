import { Counter, Gauge, type Registry } from 'prom-client';
import { type ModelConfig, upstreamsOf } from '../config.js';
import type { ReadModel } from '../ports/Store.js';
import type { UpstreamCallOutcome } from './Metrics.js';
import { type UpstreamRow, upstreamRows } from './upstreamList.js';

/**
 * The upstreams' series: calls in flight (all processes and nodes) and in service, read from the store at scrape time
 * (one read per upstream of the config, as `airs models list` does); calls ended, by outcome, counted by this process.
 * Only the config's models × upstreams are labels: a call on an upstream removed from the config is not counted.
 * The calls ended go in `registry` (this process's, summed over the processes); the gauges read from the store go in
 * `storeRegistry` (read once per scrape, never summed).
 */
export const upstreamCollectors = (
  registry: Registry,
  storeRegistry: Registry,
  models: readonly ModelConfig[],
  reads: ReadModel | undefined,
  now: () => number,
) => {
  const key = (model: string, upstream: string) => `${model}\u0000${upstream}`;
  const configured = new Set(
    models.flatMap((model) =>
      model.provider === 'openai' ? upstreamsOf(model).map((upstream) => key(model.id, upstream.name)) : [],
    ),
  );
  /** Per model and upstream (configured ones only), per outcome: calls ended. */
  const calls = new Map<
    string,
    { readonly model: string; readonly upstream: string; readonly counts: Map<string, number> }
  >();
  new Counter({
    name: 'airs_upstream_calls_total',
    help: "Calls of a model's upstream the server made, by model, upstream and outcome (ok, failed, failed_over: failed and moved to another upstream, cancelled)",
    labelNames: ['model', 'upstream', 'outcome'],
    registers: [registry],
    collect() {
      this.reset();
      for (const { model, upstream, counts } of calls.values())
        for (const [outcome, count] of counts) this.inc({ model, upstream, outcome }, count);
    },
  });
  /** The store's rows as of this scrape: both gauges share one read. */
  let reading: Promise<UpstreamRow[]> | undefined;
  const rowsShared = () => {
    if (reads === undefined) return Promise.resolve([]);
    reading ??= upstreamRows(models, reads, now()).finally(() => {
      reading = undefined;
    });
    return reading;
  };
  new Gauge({
    name: 'airs_upstream_in_flight',
    help: "Calls on a model's upstream now, in all processes and nodes (the store's counters), by model and upstream",
    labelNames: ['model', 'upstream'],
    registers: [storeRegistry],
    async collect() {
      const rows = await rowsShared();
      this.reset();
      for (const row of rows) this.set({ model: row.model, upstream: row.name }, row.inFlight);
    },
  });
  new Gauge({
    name: 'airs_upstream_in_service',
    help: "1 while a model's upstream is in service (takes calls), 0 while it is out of service or waits for its trial call",
    labelNames: ['model', 'upstream'],
    registers: [storeRegistry],
    async collect() {
      const rows = await rowsShared();
      this.reset();
      for (const row of rows) this.set({ model: row.model, upstream: row.name }, row.state === 'in_service' ? 1 : 0);
    },
  });
  return (model: string, upstream: string, outcome: UpstreamCallOutcome) => {
    const at = key(model, upstream);
    if (!configured.has(at)) return;
    let entry = calls.get(at);
    if (entry === undefined) {
      entry = { model, upstream, counts: new Map() };
      calls.set(at, entry);
    }
    entry.counts.set(outcome, (entry.counts.get(outcome) ?? 0) + 1);
  };
};
