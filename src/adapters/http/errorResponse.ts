import { FastResponse } from 'srvx';
import type { ApiError } from '../../domain/errors.js';
import type { errorCodes } from './wireFormat.js';

/** The contract's error codes (listed once, in the error schema of wireFormat.ts). */
export type ErrorCode = (typeof errorCodes)[number];

/** The one table from domain errors to HTTP: status, code and the headers the contract asks for. */
const table: {
  readonly [T in ApiError['_tag']]: (error: Extract<ApiError, { _tag: T }>) => {
    status: number;
    code: ErrorCode;
    headers?: Record<string, string>;
  };
} = {
  InvalidRequest: () => ({ status: 400, code: 'invalid_request' }),
  PayloadTooLarge: () => ({ status: 413, code: 'invalid_request' }),
  Unauthorized: () => ({ status: 401, code: 'unauthorized', headers: { 'WWW-Authenticate': 'Bearer' } }),
  Forbidden: () => ({ status: 403, code: 'forbidden' }),
  NotFound: () => ({ status: 404, code: 'not_found' }),
  MethodNotAllowed: (error) => ({
    status: 405,
    code: 'method_not_allowed',
    headers: { Allow: error.allow.join(', ') },
  }),
  RateLimited: (error) => ({
    status: 429,
    code: 'rate_limited',
    headers: { 'Retry-After': String(error.retryAfterSeconds) },
  }),
  // Retry-After: when the budget resets (the message and details say it too); `x-should-retry: false` tells OpenAI's
  // SDKs not to retry on their own, as they would a 429 (a wait of hours).
  QuotaExceeded: (error) => ({
    status: 429,
    code: 'insufficient_quota',
    headers: { 'Retry-After': String(error.retryAfterSeconds), 'x-should-retry': 'false' },
  }),
  ProcessingFailed: () => ({ status: 500, code: 'server_error' }),
  IdempotencyKeyReused: () => ({ status: 422, code: 'idempotency_key_reused' }),
  Unavailable: (error) => ({
    status: 503,
    code: 'server_error',
    headers: { 'Retry-After': String(error.retryAfterSeconds) },
  }),
};

/** Whether a route's result is a domain error (to be answered by the table above) rather than an answer. */
export const isApiError = (value: unknown): value is ApiError =>
  typeof value === 'object' && value !== null && '_tag' in value && value instanceof Error;

export const detailsOf = (error: ApiError): Record<string, unknown> | undefined => {
  if (error._tag === 'InvalidRequest') return error.details;
  if (error._tag === 'RateLimited') return { budget: error.budget, retry_after_seconds: error.retryAfterSeconds };
  if (error._tag === 'QuotaExceeded')
    return {
      budget: error.budget,
      limit: error.limit,
      used: error.used,
      resets_at: new Date(error.resetsAt).toISOString(),
    };
  // A failed request stays failed: no Retry-After, and a mark that waiting will not help (clients stop at once).
  if (error._tag === 'ProcessingFailed') return { final: true };
  return undefined;
};

export const jsonHeaders = { 'Content-Type': 'application/json' } as const;

/**
 * An answer as h3 serves it fastest: srvx's `FastResponse` with a string body and plain headers. h3 passes a
 * Response through untouched, and srvx writes it to the socket in one go with its Content-Length (an h3
 * `HTTPResponse` would first be copied into a web `Headers`, and a web `Response` body would be streamed).
 */
export const answer = (status: number, body: string, headers: Record<string, string>): Response =>
  new FastResponse(body, { status, headers });

/** The status, code and headers the contract gives an error (both faces use them; only the body's shape differs). */
export const statusOf = (error: ApiError): { status: number; code: ErrorCode; headers?: Record<string, string> } =>
  (table[error._tag] as (e: ApiError) => ReturnType<(typeof table)['NotFound']>)(error);

/** `{"error": {"code", "message", "details"?}}` with its status and headers. */
export const errorResponse = (error: ApiError, extraHeaders?: Record<string, string>): Response => {
  const { status, code, headers } = statusOf(error);
  const details = detailsOf(error);
  const body = {
    error: details === undefined ? { code, message: error.message } : { code, message: error.message, details },
  };
  const all = { ...extraHeaders, ...jsonHeaders, ...headers };
  return answer(status, JSON.stringify(body), all);
};

/** An unexpected fault: a fixed message, never the error's own text (no stack traces, paths or key material). */
export const serverErrorResponse = (extraHeaders?: Record<string, string>): Response =>
  answer(500, JSON.stringify({ error: { code: 'server_error', message: 'internal error; retry after 30 seconds' } }), {
    ...extraHeaders,
    ...jsonHeaders,
    'Retry-After': '30',
  });
