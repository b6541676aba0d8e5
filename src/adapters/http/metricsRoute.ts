import { createHash, timingSafeEqual } from 'node:crypto';
import type { H3 } from 'h3';
import type { MetricsShape } from '../../app/Metrics.js';
import { Unauthorized } from '../../domain/errors.js';
import { answer, errorResponse } from './errorResponse.js';

export type MetricsRouteDeps = {
  readonly metrics: MetricsShape;
  /** `metrics.token` from the config: when set, a scrape must send `Authorization: Bearer <token>`. */
  readonly token?: string | undefined;
};

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * `GET /metrics` (product contract, section 10): the Prometheus text format. No API key and no rate limit, and not
 * counted as traffic by a draining server (a scrape every few seconds must not keep it from stopping), like the
 * probes. With `metrics.token` set, the scraper's bearer token is compared in constant time (as digests, so the
 * length is not revealed either); a missing or wrong token is `401` in the contract's error shape.
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
    return answer(200, await deps.metrics.scrape(), {
      'Content-Type': deps.metrics.contentType,
      'Cache-Control': 'no-store',
    });
  });
};
