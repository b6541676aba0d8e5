import { grouped, hourText, plural } from './format.js';

const hourMs = 3_600_000;
/** Heights in CSS pixels; widths in percent of the chart's width, so that its text keeps its size at every width. */
const top = 18;
const plotHeight = 120;
const height = top + plotHeight + 22;
const slotPercent = 100 / 24;
const barPercent = slotPercent * 0.6;
/** The bars whose hours are written under them: far enough apart to fit on a phone, and clear of "now". */
const labelled = new Set([1, 7, 13, 19]);
const percent = (n: number) => `${Math.round(n * 1000) / 1000}%`;

/** The start of each of the 24 UTC clock hours, oldest first; the last holds `now`. */
export const hourStarts = (now: number): number[] => {
  const current = Math.floor(now / hourMs) * hourMs;
  return Array.from({ length: 24 }, (_, i) => current - (23 - i) * hourMs);
};

/** A bar's height in the plot: proportional to its count, the largest count filling the plot. */
export const barHeight = (count: number, max: number): number =>
  max <= 0 ? 0 : Math.round((count / max) * plotHeight * 100) / 100;

const span = (start: number): string => `${hourText(start)}–${hourText(start + hourMs)} UTC`;

/**
 * Requests per hour over the last 24 hours, as SVG drawn on the server: titled and described for screen readers,
 * each bar with its own title, and the numbers also as a table.
 */
export const HourlyChart = ({ hourly, now }: { hourly: readonly number[]; now: number }) => {
  const starts = hourStarts(now);
  const counts = starts.map((_, i) => Math.max(0, hourly[i] ?? 0));
  const max = Math.max(0, ...counts);
  const total = counts.reduce((a, b) => a + b, 0);
  const busiest = counts.indexOf(max);
  const summary =
    total === 0
      ? 'No requests in the last 24 hours.'
      : `${plural(total, 'request')} in the last 24 hours; the busiest hour was ${span(starts[busiest]!)} with ${grouped(max)}.`;
  return (
    <figure class="chart">
      <svg height={height} role="img" aria-labelledby="chart-title chart-desc">
        <title id="chart-title">Requests per hour, last 24 hours (UTC)</title>
        <desc id="chart-desc">{summary}</desc>
        <line class="axis" x1="0" y1={top + plotHeight} x2="100%" y2={top + plotHeight} />
        <line class="axis" x1="0" y1={top} x2="100%" y2={top} />
        <text x="0" y={top - 5} text-anchor="start">
          {plural(max, 'request')}
        </text>
        {counts.map((count, i) => {
          const h = barHeight(count, max);
          return (
            <rect
              class="bar"
              x={percent(i * slotPercent + (slotPercent - barPercent) / 2)}
              y={top + plotHeight - h}
              width={percent(barPercent)}
              height={h}
              data-count={count}
            >
              <title>{`${span(starts[i]!)}: ${plural(count, 'request')}`}</title>
            </rect>
          );
        })}
        {starts.map((start, i) =>
          labelled.has(i) ? (
            <text x={percent((i + 0.5) * slotPercent)} y={height - 6} text-anchor="middle">
              {hourText(start)}
            </text>
          ) : null,
        )}
        <text x="100%" y={height - 6} text-anchor="end">
          now
        </text>
      </svg>
      <figcaption class="hint">{summary}</figcaption>
      <details>
        <summary>Show the numbers</summary>
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th scope="col">Hour (UTC)</th>
                <th scope="col" class="num">
                  Requests
                </th>
              </tr>
            </thead>
            <tbody>
              {starts.map((start, i) => (
                <tr>
                  <td>{span(start)}</td>
                  <td class="num">{grouped(counts[i]!)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      </details>
    </figure>
  );
};
