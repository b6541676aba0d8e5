/** Small arithmetic for the report. */

export const median = (values: readonly number[]): number => {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
};

export const round = (value: number, digits = 0): number =>
  Number.isFinite(value) ? Math.round(value * 10 ** digits) / 10 ** digits : value;

export const ratio = (numerator: number, denominator: number, digits = 2): number =>
  denominator > 0 ? round(numerator / denominator, digits) : Number.NaN;
