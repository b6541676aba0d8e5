import { createHash, timingSafeEqual } from 'node:crypto';
import type { H3 } from 'h3';
import type { MetricsShape } from '../../app/Metrics.js';
import { Unauthorized, Unavailable } from '../../domain/errors.js';
import { answer, errorResponse } from './errorResponse.js';

export type MetricsRouteDeps = {
  readonly metrics: MetricsShape;
  /** `metrics.token` from the config: when set, a scrape must send `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
  /**
   * Under `serve --processes N`: the text of every process's own figures summed (the primary's answer,
   * ipc/metricsAsker.ts). The answer is that sum and the gauges read from the store, read once here. Without it the
   * answer is this process's alone (a server of one process).
   */
  readonly gather?: (() => Promise<string>) | undefined;
};

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * `GET /metrics` (product contract, section 10): the Prometheus text format. No API key and no rate limit, and not
 * counted as traffic by a draining server (a scrape every few seconds must not keep it from stopping), like the
 * probes. With `metrics.token` set, the scraper's bearer token is compared in constant time (as digests, so the
 * length is not revealed either); a missing or wrong token is `401` in the contract's error shape. Under
 * `serve --processes N` whichever process takes the scrape answers for all of them (`gather`).
 */
export const mountMetrics = (app: H3, deps: MetricsRouteDeps) => {
  const expected = deps.token === undefined ? undefined : digest(deps.token);
  const refuse = (message: string) =>
    errorResponse(new Unauthorized({ message }), { 'WWW-Authenticate': 'Bearer', 'Cache-Control': 'no-store' });
  app.get('/metrics', async (event) => {
    if (expected !== undefined) {
      const header = event.req.headers.get('authorization');
      if (header === null) return refuse('the metrics endpoint needs an Authorization: Bearer <metrics token> header');
      const match = /^Bearer +(\S+) *$/i.exec(header);
      if (match === null) return refuse('Authorization header must be "Bearer <metrics token>"');
      if (!timingSafeEqual(digest(match[1] as string), expected)) return refuse('invalid metrics token');
    }
    let body: string;
    if (deps.gather === undefined) body = await deps.metrics.scrape();
    else {
      try {
        const [summed, store] = await Promise.all([deps.gather(), deps.metrics.storeFigures()]);
        body = `${summed}\n${store}`;
      } catch (error) {
        // A partial answer would look like counters going back (a reset) to Prometheus: none, and a retry.
        return errorResponse(
          new Unavailable({
            message: `metrics of every server process could not be gathered: ${(error as Error).message}`,
            retryAfterSeconds: 1,
          }),
          { 'Cache-Control': 'no-store' },
        );
      }
    }
    return answer(200, body, {
      'Content-Type': deps.metrics.contentType,
      'Cache-Control': 'no-store',
    });
  });
};
