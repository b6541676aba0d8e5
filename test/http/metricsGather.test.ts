import { H3 } from 'h3';
import { describe, expect, it } from 'vitest';
import { mountMetrics } from '../../src/adapters/http/metricsRoute.js';
import { createMetrics } from '../../src/app/prometheusMetrics.js';

/* `GET /metrics` of a server process under `serve --processes N`: the primary's sum, then the store's gauges. */

const token = 'a-metrics-token-of-this-test';

const served = (gather: () => Promise<string>) => {
  const app = new H3();
  mountMetrics(app, { metrics: createMetrics({ modelIds: ['echo'] }), token, gather });
  return (headers: Record<string, string> = { authorization: `Bearer ${token}` }) =>
    app.request('/metrics', { headers });
};

describe('GET /metrics answering for every server process', () => {
  it('answers the sum the primary gave, followed by the gauges read from the store, each family once', async () => {
    const scrape = served(
      async () => '# HELP airs_summed_total A sum\n# TYPE airs_summed_total counter\nairs_summed_total 7\n',
    );
    const response = await scrape();
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toMatch(/^airs_summed_total 7$/m);
    expect(text).toMatch(/^airs_queue_depth\{model="echo"\} 0$/m);
    // Only the primary's sum carries this process's own figures: they are not added a second time.
    expect(text).not.toContain('airs_processing_attempts_total');
    const families = [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]);
    expect(new Set(families).size).toBe(families.length);
  });

  it('answers 503 with Retry-After when the primary gives no sum, rather than a partial one', async () => {
    const scrape = served(() => Promise.reject(new Error('the primary did not answer within 5000 ms')));
    const response = await scrape();
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('1');
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.message).toContain('the primary did not answer within 5000 ms');
  });

  it('still wants the metrics token before asking the primary', async () => {
    let asked = 0;
    const scrape = served(async () => {
      asked++;
      return '';
    });
    expect((await scrape({})).status).toBe(401);
    expect((await scrape({ authorization: 'Bearer wrong-token-of-this-test' })).status).toBe(401);
    expect(asked).toBe(0);
  });
});
