/*
 * The messages of a summed scrape under `serve --processes N` (issue 42), over the cluster's IPC channel: the server
 * process that takes `GET /metrics` asks the primary; the primary asks every server process for its own figures,
 * sums those that answer in time (scrapeSum.ts) and answers the asker with the text.
 */

/** A server process took a scrape: it wants the sum over every process. */
export type MetricsAsk = { readonly airs: 'metrics-ask'; readonly id: number };

/** The primary wants this process's own figures for gather `gather`. */
export type MetricsCollect = { readonly airs: 'metrics-collect'; readonly gather: number };

/** A server process's own figures (prom-client's JSON) for gather `gather`. */
export type MetricsPart = {
  readonly airs: 'metrics-part';
  readonly gather: number;
  readonly figures: readonly unknown[];
};

/** The summed text for ask `id`, or why there is none. */
export type MetricsAnswer =
  | { readonly airs: 'metrics-answer'; readonly id: number; readonly text: string }
  | { readonly airs: 'metrics-answer'; readonly id: number; readonly failed: string };

const tagOf = (message: unknown): unknown =>
  typeof message === 'object' && message !== null ? (message as { airs?: unknown }).airs : undefined;

export const isMetricsAsk = (message: unknown): message is MetricsAsk =>
  tagOf(message) === 'metrics-ask' && typeof (message as MetricsAsk).id === 'number';

export const isMetricsCollect = (message: unknown): message is MetricsCollect =>
  tagOf(message) === 'metrics-collect' && typeof (message as MetricsCollect).gather === 'number';

export const isMetricsPart = (message: unknown): message is MetricsPart =>
  tagOf(message) === 'metrics-part' &&
  typeof (message as MetricsPart).gather === 'number' &&
  Array.isArray((message as MetricsPart).figures);

export const isMetricsAnswer = (message: unknown): message is MetricsAnswer =>
  tagOf(message) === 'metrics-answer' && typeof (message as MetricsAnswer).id === 'number';
