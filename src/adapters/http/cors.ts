/**
 * CORS for browser clients of `/v1/*` (contract 13): an origin in `cors.allowedOrigins` (or any, with `*`) gets
 * `Access-Control-Allow-Origin` on every answer and a `204` to its preflight `OPTIONS`. Credentials are never allowed:
 * the API key travels in `Authorization`, never in a cookie. With no origin configured the app makes none of this
 * (app.ts): nothing is sent.
 */

import type { HeaderBag } from './route.js';

/** Methods airs answers under /v1. */
const allowedMethods = 'GET, POST, OPTIONS';

/** Request headers airs reads, and those the OpenAI SDKs send (their `x-stainless-*` family is matched by prefix). */
const allowedHeaders = [
  'authorization',
  'content-type',
  'idempotency-key',
  'cancel-after',
  'openai-organization',
  'openai-project',
  'openai-beta',
  'x-stainless-arch',
  'x-stainless-lang',
  'x-stainless-os',
  'x-stainless-package-version',
  'x-stainless-retry-count',
  'x-stainless-runtime',
  'x-stainless-runtime-version',
  'x-stainless-timeout',
  'x-stainless-helper-method',
];
const allowedHeaderSet = new Set(allowedHeaders);
const stainless = /^x-stainless-[a-z0-9-]{1,64}$/;

/** Answer headers a page may read: the rate limit, when to retry, and which request it was. */
const exposedHeaders =
  'RateLimit, RateLimit-Policy, Retry-After, x-request-id, x-should-retry, Idempotent-Replayed, Location, WWW-Authenticate';

/** How long a browser may keep a preflight's answer (seconds). */
const preflightMaxAgeSeconds = 600;

/** Request headers a preflight asks for, at most this many (a longer list is answered with the fixed list only). */
const maxRequestedHeaders = 64;

export type Cors = {
  /**
   * Adds the CORS headers of an answer to `headers` when the call is to `/v1/*` from an allowed origin; returns
   * whether it did.
   */
  answerHeaders(pathname: string, origin: string | null, headers: HeaderBag): boolean;
  /** A preflight's `204`, when `method` is OPTIONS on /v1/* from an allowed origin asking for a method. */
  preflight(
    method: string,
    pathname: string,
    requestHeaders: { get(name: string): string | null },
  ): Response | undefined;
};

const isApiPath = (pathname: string) => pathname.startsWith('/v1/');

/** The headers a preflight asks for that airs accepts, added to the fixed list. */
const headersToAllow = (requested: string | null): string => {
  const names = new Set(allowedHeaders);
  if (requested !== null && requested.length <= 4_096) {
    const asked = requested.split(',', maxRequestedHeaders + 1);
    if (asked.length <= maxRequestedHeaders)
      for (const raw of asked) {
        const name = raw.trim().toLowerCase();
        if (!allowedHeaderSet.has(name) && stainless.test(name)) names.add(name);
      }
  }
  return [...names].join(', ');
};

export const createCors = (allowedOrigins: readonly string[]): Cors => {
  const any = allowedOrigins.includes('*');
  const origins = new Set(allowedOrigins);
  const allowed = (origin: string | null): origin is string => origin !== null && (any || origins.has(origin));
  const answerHeaders: Cors['answerHeaders'] = (pathname, origin, headers) => {
    if (!isApiPath(pathname) || !allowed(origin)) return false;
    // The origin named, not `*`, even when any is allowed: one rule for every answer, and caches keyed by Origin.
    headers['Access-Control-Allow-Origin'] = origin;
    headers.Vary = 'Origin';
    headers['Access-Control-Expose-Headers'] = exposedHeaders;
    return true;
  };
  return {
    answerHeaders,
    preflight: (method, pathname, requestHeaders) => {
      if (method !== 'OPTIONS' || requestHeaders.get('access-control-request-method') === null) return undefined;
      const headers: HeaderBag = {};
      if (!answerHeaders(pathname, requestHeaders.get('origin'), headers)) return undefined;
      headers.Vary = 'Origin, Access-Control-Request-Headers';
      headers['Access-Control-Allow-Methods'] = allowedMethods;
      headers['Access-Control-Allow-Headers'] = headersToAllow(requestHeaders.get('access-control-request-headers'));
      headers['Access-Control-Max-Age'] = String(preflightMaxAgeSeconds);
      return new Response(null, { status: 204, headers });
    },
  };
};
