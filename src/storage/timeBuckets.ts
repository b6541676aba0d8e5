/** The buckets of the per-hour and per-day reads (`requestCountsByHour`, `usageByDay`), the same on every store. */
export const hourMs = 3_600_000;
export const dayMs = 86_400_000;

/** The starts of `count` buckets `width` ms wide from `from` (none for a count below one). */
export const bucketStarts = (from: number, width: number, count: number): number[] =>
  Array.from({ length: Math.max(0, count) }, (_, i) => from + i * width);
