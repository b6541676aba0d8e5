import { AggregatorRegistry } from 'prom-client';

/*
 * `GET /metrics` under `serve --processes N` (issue 42): whichever process takes the scrape, the answer is the sum
 * over every process. Each process's own figures (Metrics.ownFigures: prom-client's JSON, plain data that crosses
 * the IPC channel) are combined by prom-client's `AggregatorRegistry.aggregate`, each metric by its `aggregator`:
 * counters and histograms `sum`; this process's gauges `sum` too (long calls held, their bound); Node's own by
 * prom-client's choice (event-loop lag `average`/`min`/`max`, start time `omit`, version `first`). The gauges read
 * from the store are not in those figures (read once by the answering process), so never multiplied by N.
 */

/** What the primary gathered for one scrape. */
export type GatheredFigures = {
  /** One entry per process that answered in time: its `ownFigures()`. */
  readonly answered: readonly (readonly unknown[])[];
  /** The last figures of the processes that did not answer in time but did before (one entry each). */
  readonly late: readonly (readonly unknown[])[];
  /** Processes that did not answer in time and never did: nothing of theirs is in the sums. */
  readonly missing: number;
  /** The counters and histograms of server processes that ended (retiredFigures), or none. */
  readonly retired?: readonly unknown[] | undefined;
  /** How long the primary waited for them (ms), said in the answer when some were late or missing. */
  readonly waitedMs: number;
};

/*
 * Why late and retired figures are summed: Prometheus reads any drop of a counter as a restart from 0, so a sum that
 * lost one process's share for a scrape would show the other processes' whole counts as new. With a late process's
 * last figures, and the counts of a process that ended kept, every counter and histogram of the answer only grows
 * (but for the counts of a process between its last scrape and its end, which nobody can read any more).
 */

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
 * The counters and histograms of `figures` (processes' `ownFigures()`, and earlier retired figures) summed into one
 * set: what stays of server processes that ended. Gauges (what a process holds now) end with the process.
 */
export const retiredFigures = async (figures: readonly (readonly unknown[])[]): Promise<readonly unknown[]> => {
  const counts = figures.map((set) =>
    set.filter((metric) => {
      const type = (metric as { type?: unknown }).type;
      return type === 'counter' || type === 'histogram';
    }),
  );
  return AggregatorRegistry.aggregate(counts).getMetricsAsJSON();
};

/**
 * The Prometheus text of the processes' figures summed, with `airs_metrics_processes` (answered, late, missing) and,
 * when some were late or missing, a comment line saying so (a scraper ignores comments; a person reading sees it).
 */
export const sumFigures = async (gathered: GatheredFigures): Promise<string> => {
  const sets = [...gathered.answered, ...gathered.late, ...(gathered.retired === undefined ? [] : [gathered.retired])];
  const summed = await AggregatorRegistry.aggregate(sets).metrics();
  const processes = gauge(
    'airs_metrics_processes',
    'Server processes this answer sums: answered in time; late (did not answer in time: their last figures are summed); missing (never answered: not in the sums)',
    [
      { labels: { state: 'answered' }, value: gathered.answered.length },
      { labels: { state: 'late' }, value: gathered.late.length },
      { labels: { state: 'missing' }, value: gathered.missing },
    ],
  );
  const own = await AggregatorRegistry.aggregate([[processes]]).metrics();
  const asked = gathered.answered.length + gathered.late.length + gathered.missing;
  const notes = [
    gathered.late.length === 0
      ? ''
      : `# airs: ${gathered.late.length} of ${asked} server processes did not answer within ${gathered.waitedMs} ms: their last figures are summed\n`,
    gathered.missing === 0
      ? ''
      : `# airs: ${gathered.missing} of ${asked} server processes did not answer within ${gathered.waitedMs} ms: their figures are missing from these sums\n`,
  ].join('');
  return prometheusText(`${notes}${summed}\n${own}`);
};
