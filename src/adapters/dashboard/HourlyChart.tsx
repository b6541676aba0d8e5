import { grouped, hourText, plural } from './format.js';

const hourMs = 3_600_000;
const slot = 24;
const barWidth = 16;
const left = 40;
const top = 12;
const plotHeight = 120;
const width = left + 24 * slot + 8;
const height = top + plotHeight + 24;

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
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="chart-title chart-desc">
        <title id="chart-title">Requests per hour, last 24 hours (UTC)</title>
        <desc id="chart-desc">{summary}</desc>
        <line class="axis" x1={left} y1={top + plotHeight} x2={width - 4} y2={top + plotHeight} />
        <line class="axis" x1={left} y1={top} x2={width - 4} y2={top} />
        <text x={left - 6} y={top + 4} text-anchor="end">
          {grouped(max)}
        </text>
        <text x={left - 6} y={top + plotHeight + 4} text-anchor="end">
          0
        </text>
        {counts.map((count, i) => {
          const h = barHeight(count, max);
          return (
            <rect
              class="bar"
              x={left + i * slot + (slot - barWidth) / 2}
              y={top + plotHeight - h}
              width={barWidth}
              height={h}
              data-count={count}
            >
              <title>{`${span(starts[i]!)}: ${plural(count, 'request')}`}</title>
            </rect>
          );
        })}
        {starts.map((start, i) =>
          i % 6 === 0 ? (
            <text x={left + i * slot + slot / 2} y={height - 6} text-anchor="middle">
              {hourText(start)}
            </text>
          ) : null,
        )}
        <text x={left + 23 * slot + slot / 2} y={height - 6} text-anchor="middle">
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
