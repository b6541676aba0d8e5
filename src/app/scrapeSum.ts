import { AggregatorRegistry } from 'prom-client';

/*
 * `GET /metrics` under `serve --processes N` (issue 42): whichever process takes the scrape, the answer is the sum
 * over every process. Each process's own figures (Metrics.ownFigures: prom-client's JSON, plain data that crosses
 * the IPC channel) are combined by prom-client's `AggregatorRegistry.aggregate`, each metric by its `aggregator`:
 * counters and histograms `sum`; this process's gauges `sum` too (long calls held, their bound); Node's own by
 * prom-client's choice (event-loop lag `average`/`min`/`max`, start time `omit`, version `first`). The gauges read
 * from the store are not in those figures (read once by the answering process), so never multiplied by N.
 */

/** What the primary gathered for one scrape: the figures of the processes that answered in time. */
export type GatheredFigures = {
  /** One entry per process that answered: its `ownFigures()`. */
  readonly answered: readonly (readonly unknown[])[];
  /** Processes asked that did not answer in time (their figures are missing from the sum). */
  readonly missing: number;
  /** How long the primary waited for them (ms), said in the answer when some are missing. */
  readonly waitedMs: number;
};

const nanSamples = / Nan\n/g;

/** prom-client writes a NaN as `Nan` (the event-loop lag before its first sample); the text format says `NaN`. */
export const prometheusText = (text: string) => text.replace(nanSamples, ' NaN\n');

type Sample = { readonly labels: Record<string, string>; readonly value: number };
/** A gauge in prom-client's JSON shape (what `getMetricsAsJSON` gives), ready for `aggregate`. */
const gauge = (name: string, help: string, values: readonly Sample[]) => ({
  name,
  help,
  type: 'gauge',
  aggregator: 'sum',
  values,
});

/**
 * The Prometheus text of the processes' figures summed, with `airs_metrics_processes` (answered, missing) and, when
 * some are missing, a comment line saying so (a scraper ignores comments; a person reading the answer sees it).
 */
export const sumFigures = async (gathered: GatheredFigures): Promise<string> => {
  const summed = await AggregatorRegistry.aggregate([...gathered.answered]).metrics();
  const processes = gauge(
    'airs_metrics_processes',
    'Server processes whose figures this answer sums (answered) or lacks because they did not answer in time (missing)',
    [
      { labels: { state: 'answered' }, value: gathered.answered.length },
      { labels: { state: 'missing' }, value: gathered.missing },
    ],
  );
  const own = await AggregatorRegistry.aggregate([[processes]]).metrics();
  const note =
    gathered.missing === 0
      ? ''
      : `# airs: ${gathered.missing} of ${gathered.missing + gathered.answered.length} server processes did not answer within ${gathered.waitedMs} ms: their figures are missing from these sums\n`;
  return prometheusText(`${note}${summed}\n${own}`);
};
