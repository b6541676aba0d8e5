import { describe, expect, it } from 'vitest';
import { HttpRoute } from '../../src/app/Metrics.js';
import { createMetrics } from '../../src/app/prometheusMetrics.js';
import { retiredFigures, sumFigures } from '../../src/app/scrapeSum.js';

/** The value of one sample of the text format, or undefined. */
const sample = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

/** Two processes' metrics, each with its own counts (one app per process in a server). */
const twoProcesses = () => {
  const one = createMetrics({ modelIds: ['echo'] });
  const two = createMetrics({ modelIds: ['echo'] });
  one.attemptStarted('echo');
  one.attemptEnded('echo', 'completed', 0.002, { inputTokens: 3, outputTokens: 5 });
  for (let i = 0; i < 2; i++) {
    two.attemptStarted('echo');
    two.attemptEnded('echo', 'completed', 0.2, { inputTokens: 1, outputTokens: 1 });
  }
  one.http(HttpRoute.submit, 202, performance.now());
  two.http(HttpRoute.submit, 202, performance.now());
  two.http(HttpRoute.submit, 429, performance.now());
  return { one, two };
};

describe('the sum of server processes’ metrics (serve --processes N)', () => {
  it('sums counters and histograms bucket by bucket over the processes, and leaves the store-read gauges out', async () => {
    const { one, two } = twoProcesses();
    const text = await sumFigures({
      answered: [await one.ownFigures(), await two.ownFigures()],
      late: [],
      missing: 0,
      waitedMs: 2_000,
    });
    expect(sample(text, 'airs_processing_attempts_total{model="echo"}')).toBe(3);
    expect(sample(text, 'airs_processing_outcomes_total{model="echo",outcome="completed"}')).toBe(3);
    expect(sample(text, 'airs_tokens_total{model="echo",direction="input"}')).toBe(5);
    expect(sample(text, 'airs_processing_duration_seconds_bucket{le="0.01",model="echo"}')).toBe(1);
    expect(sample(text, 'airs_processing_duration_seconds_bucket{le="0.25",model="echo"}')).toBe(3);
    expect(sample(text, 'airs_processing_duration_seconds_count{model="echo"}')).toBe(3);
    expect(sample(text, 'airs_http_requests_total{method="POST",route="/v1/ai",status="202"}')).toBe(2);
    expect(sample(text, 'airs_http_requests_total{method="POST",route="/v1/ai",status="429"}')).toBe(1);
    expect(sample(text, 'airs_metrics_processes{state="answered"}')).toBe(2);
    // Read once from the store by the process answering the scrape, never part of the processes' figures.
    expect(text).not.toContain('airs_queue_depth');
    expect(text).not.toContain('airs_upstream_in_flight');
    // Each process's start time means nothing summed: prom-client omits it.
    expect(text).not.toContain('process_start_time_seconds');
    expect(text).not.toMatch(/^# airs:/m);
  });

  it('sums a late process’s last figures and says how many were late or missing in a comment line', async () => {
    const { one, two } = twoProcesses();
    const text = await sumFigures({
      answered: [await one.ownFigures()],
      late: [await two.ownFigures()],
      missing: 1,
      waitedMs: 2_000,
    });
    expect(sample(text, 'airs_processing_attempts_total{model="echo"}')).toBe(3);
    expect(sample(text, 'airs_metrics_processes{state="late"}')).toBe(1);
    expect(sample(text, 'airs_metrics_processes{state="missing"}')).toBe(1);
    expect(text).toContain(
      '# airs: 1 of 3 server processes did not answer within 2000 ms: their last figures are summed',
    );
    expect(text).toContain('# airs: 1 of 3 server processes did not answer within 2000 ms: their figures are missing');
  });

  it('keeps the counters and histograms of processes that ended, and drops their gauges', async () => {
    const { one, two } = twoProcesses();
    const retired = await retiredFigures([await one.ownFigures(), await two.ownFigures()]);
    const names = retired.map((metric) => (metric as { name: string }).name);
    expect(names).toContain('airs_processing_attempts_total');
    expect(names).toContain('airs_processing_duration_seconds');
    expect(names).not.toContain('airs_long_calls_open');
    expect(names).not.toContain('process_resident_memory_bytes');
    const live = createMetrics({ modelIds: ['echo'] });
    live.attemptStarted('echo');
    const text = await sumFigures({
      answered: [await live.ownFigures()],
      late: [],
      missing: 0,
      retired,
      waitedMs: 2_000,
    });
    expect(sample(text, 'airs_processing_attempts_total{model="echo"}')).toBe(4);
    expect(sample(text, 'airs_processing_duration_seconds_count{model="echo"}')).toBe(3);
  });
});
