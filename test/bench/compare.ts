/**
 * `--against`: the figures of the runs of two builds (A, this checkout; B, the other revision), set side by side.
 * Each run is a whole bench run; a figure is the run's own (a median of its rounds, or its one timed run). Per
 * figure: every run's value, the median of each build's runs, the ratio of the medians (A / B), each build's spread
 * and the range of the ratios of runs taken in turn (A1 / B1, A2 / B2 ...).
 */
import type { Figure } from './context.js';
import { markdownTable } from './report.js';
import { median, round } from './stats.js';

export type Build = 'A' | 'B';

/** One whole bench run of one build: the figures of its scenarios. */
export type BuildRun = { readonly build: Build; readonly round: number; readonly figures: readonly Figure[] };

export type Comparison = {
  readonly key: string;
  readonly label: string;
  readonly better: Figure['better'];
  /** The values of each run, in the order run (NaN where a run has none). */
  readonly a: readonly number[];
  readonly b: readonly number[];
  readonly aMedian: number;
  readonly bMedian: number;
  /** aMedian / bMedian. */
  readonly ratio: number;
  /** (max - min) / median of each build's runs, in %. */
  readonly aSpreadPct: number;
  readonly bSpreadPct: number;
  /** The lowest and highest A_i / B_i. */
  readonly pairRatios: readonly [number, number];
  /**
   * `A better` or `A worse` when every run of one build beats every run of the other in the figure's direction;
   * `overlap` when their ranges overlap (the noise cannot tell them apart).
   */
  readonly verdict: 'A better' | 'A worse' | 'overlap' | 'n/a';
};

const finite = (values: readonly number[]) => values.filter(Number.isFinite);

const spreadPct = (values: readonly number[]) => {
  const known = finite(values);
  const mid = median(known);
  return known.length === 0 || mid === 0
    ? Number.NaN
    : round(((Math.max(...known) - Math.min(...known)) / Math.abs(mid)) * 100, 1);
};

const verdictOf = (a: readonly number[], b: readonly number[], better: Figure['better']): Comparison['verdict'] => {
  const knownA = finite(a);
  const knownB = finite(b);
  if (knownA.length === 0 || knownB.length === 0) return 'n/a';
  const aHigher = Math.min(...knownA) > Math.max(...knownB);
  const aLower = Math.max(...knownA) < Math.min(...knownB);
  if (!aHigher && !aLower) return 'overlap';
  return aHigher === (better === 'higher') ? 'A better' : 'A worse';
};

/** Every figure of the runs, in the order they first appear, A against B. */
export const compareRuns = (runs: readonly BuildRun[]): Comparison[] => {
  const order = (build: Build) => runs.filter((run) => run.build === build).sort((x, y) => x.round - y.round);
  const aRuns = order('A');
  const bRuns = order('B');
  const seen = new Map<string, Figure>();
  for (const run of runs) for (const figure of run.figures) if (!seen.has(figure.key)) seen.set(figure.key, figure);
  return [...seen.values()].map((figure) => {
    const valuesOf = (list: readonly BuildRun[]) =>
      list.map((run) => run.figures.find((f) => f.key === figure.key)?.value ?? Number.NaN);
    const a = valuesOf(aRuns);
    const b = valuesOf(bRuns);
    const aMedian = round(median(finite(a)), 3);
    const bMedian = round(median(finite(b)), 3);
    const pairs = a
      .map((value, i) => value / (b[i] ?? Number.NaN))
      .filter((value) => Number.isFinite(value))
      .map((value) => round(value, 3));
    return {
      key: figure.key,
      label: figure.label,
      better: figure.better,
      a,
      b,
      aMedian,
      bMedian,
      ratio: bMedian === 0 ? Number.NaN : round(aMedian / bMedian, 3),
      aSpreadPct: spreadPct(a),
      bSpreadPct: spreadPct(b),
      pairRatios: pairs.length === 0 ? [Number.NaN, Number.NaN] : [Math.min(...pairs), Math.max(...pairs)],
      verdict: verdictOf(a, b, figure.better),
    };
  });
};

const show = (value: number) => (Number.isFinite(value) ? String(value) : '-');

/** The comparison as a Markdown table (pasted as is into docs/performance.md). */
export const comparisonTable = (comparisons: readonly Comparison[]): string =>
  markdownTable(
    ['Figure', 'Better', 'A runs', 'B runs', 'A median', 'B median', 'A / B', 'A/B by run', 'Spread A, B', 'Verdict'],
    comparisons.map((c) => [
      c.label,
      c.better,
      c.a.map(show).join(', '),
      c.b.map(show).join(', '),
      show(c.aMedian),
      show(c.bMedian),
      show(c.ratio),
      c.pairRatios[0] === c.pairRatios[1] ? show(c.pairRatios[0]) : `${show(c.pairRatios[0])}–${show(c.pairRatios[1])}`,
      `${show(c.aSpreadPct)} %, ${show(c.bSpreadPct)} %`,
      c.verdict,
    ]),
  );
