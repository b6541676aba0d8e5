import { Gauge, type Registry } from 'prom-client';
import type { ReadModel } from '../ports/Store.js';
import { queueScanLimit } from './Metrics.js';

/**
 * The queue gauges: read from the store at scrape time (one scan shared by the three), so the same in every process
 * of a data directory or database. Under `serve --processes N` only the process answering the scrape reads them: they
 * are never summed over the processes (scrapeSum.ts).
 */
export const queueGauges = (
  registry: Registry,
  reads: ReadModel | undefined,
  now: () => number,
  modelIds: readonly string[],
) => {
  /** The queue as of the last scrape, by model; read once per scrape by both gauges. */
  let queueByModel = new Map<string, { depth: number; oldestAvailableAt: number }>(
    modelIds.map((model) => [model, { depth: 0, oldestAvailableAt: Number.POSITIVE_INFINITY }]),
  );
  let truncated = false;
  const scanQueue = async () => {
    truncated = false;
    if (reads === undefined) return;
    const depths = await reads.queueDepths(now(), queueScanLimit);
    truncated = depths.truncated;
    const found = new Map(
      depths.models.map(({ model, depth, oldestAvailableAt }) => [model, { depth, oldestAvailableAt }]),
    );
    // Models seen before and empty now go back to 0 rather than keeping their last value.
    for (const model of queueByModel.keys())
      if (!found.has(model)) found.set(model, { depth: 0, oldestAvailableAt: Number.POSITIVE_INFINITY });
    queueByModel = found;
  };
  /** prom-client collects the gauges of one scrape at once: both queue gauges share the scan in flight. */
  let scanning: Promise<void> | undefined;
  const scanShared = () => {
    scanning ??= scanQueue().finally(() => {
      scanning = undefined;
    });
    return scanning;
  };
  new Gauge({
    name: 'airs_queue_depth',
    help: `Requests queued (waiting for a worker or a retry), by model; read at scrape time, at most ${queueScanLimit} entries`,
    labelNames: ['model'],
    registers: [registry],
    async collect() {
      await scanShared();
      this.reset();
      for (const [model, { depth }] of queueByModel) this.set({ model }, depth);
    },
  });
  new Gauge({
    name: 'airs_queue_oldest_age_seconds',
    help: 'Age of the oldest queued request available to a worker (since its creation or the end of its backoff), by model',
    labelNames: ['model'],
    registers: [registry],
    async collect() {
      await scanShared();
      this.reset();
      const at = now();
      for (const [model, { oldestAvailableAt }] of queueByModel)
        this.set({ model }, Number.isFinite(oldestAvailableAt) ? Math.max(0, at - oldestAvailableAt) / 1000 : 0);
    },
  });
  new Gauge({
    name: 'airs_queue_scan_truncated',
    help: `1 when the last scrape stopped reading the queue after ${queueScanLimit} entries (the queue gauges are then lower bounds)`,
    registers: [registry],
    collect() {
      this.set(truncated ? 1 : 0);
    },
  });
};
