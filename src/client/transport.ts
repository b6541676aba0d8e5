import { AirsError, errorFromResponse } from './errors.js';
import type { Scope } from './scope.js';
import { parseRetryAfter } from './timing.js';
import type { FetchLike, RetryInfo } from './types.js';

/** The client's settings with every default filled in. */
export type Settings = {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly fetch: FetchLike;
  readonly now: () => number;
  readonly pollIntervalMs: number;
  readonly firstPollDelayMs: number;
  readonly serverErrorDelayMs: number;
  readonly maxRetries: number;
  readonly maxRateLimitRetries: number;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
};

/** A successful (2xx) answer: its status, its body parsed as JSON (`undefined` if it is not JSON), `Retry-After`. */
export type Answer = { readonly status: number; readonly body: unknown; readonly retryAfterMs: number | undefined };

/** Answers that mean "not now": the specification says to retry a 500 after 30 s; proxies send 502 and 504. A
 * 500 whose details say `final: true` is not one of them. */
const transientStatuses = new Set([500, 502, 503, 504]);

const parseJson = (text: string): unknown => {
  try {
    return text === '' ? undefined : (JSON.parse(text) as unknown);
  } catch {
    return undefined;
  }
};

/** The most specific reason a `fetch` gave (Node puts `ECONNREFUSED` and the like in `cause`). */
const describe = (error: unknown): string => {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return cause.code;
  if (typeof cause?.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
};

/** `/v1/ai` calls: one `fetch` per attempt, bounded retries after 429 and 5xx, fail fast on everything else. */
export const createTransport = (settings: Settings) => {
  const endpoint = `${settings.baseUrl.replace(/\/+$/, '')}/v1/ai`;

  /** One attempt. Aborting the scope's signal, or reaching its deadline, cancels the `fetch` itself. */
  const attempt = async (method: 'GET' | 'POST', query: string, body: string | undefined, scope: Scope) => {
    scope.check();
    const controller = new AbortController();
    const onAbort = () => controller.abort(scope.signal?.reason);
    scope.signal?.addEventListener('abort', onAbort, { once: true });
    const remaining = scope.remainingMs();
    let timedOut = false;
    const timer =
      remaining === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            controller.abort();
          }, remaining);
    const headers: Record<string, string> = { authorization: `Bearer ${settings.apiKey}`, accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    try {
      const response = await settings.fetch(`${endpoint}${query}`, {
        method,
        headers,
        body,
        signal: controller.signal,
      });
      const text = await response.text();
      return {
        status: response.status,
        body: parseJson(text),
        retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), settings.now()),
      };
    } catch (error) {
      if (scope.signal?.aborted) throw scope.signal.reason;
      if (timedOut) throw scope.timeoutError();
      throw new AirsError({
        status: 0,
        code: 'network_error',
        message: `cannot reach ${settings.baseUrl}: ${describe(error)}`,
        cause: error,
      });
    } finally {
      clearTimeout(timer);
      scope.signal?.removeEventListener('abort', onAbort);
    }
  };

  /** Calls until a 2xx (returned) or an answer that is not retried, or retries run out (thrown as AirsError). */
  const call = async (
    method: 'GET' | 'POST',
    query: string,
    body: string | undefined,
    scope: Scope,
  ): Promise<Answer> => {
    let serverRetries = 0;
    let rateLimitRetries = 0;
    for (;;) {
      const answer = await attempt(method, query, body, scope);
      if (answer.status >= 200 && answer.status < 300) return answer;
      const error = errorFromResponse(answer.status, answer.body, answer.retryAfterMs);
      let delayMs: number;
      let retry: number;
      // The server says the failure is final (a request that failed for good): asking again cannot change it.
      if (error.details?.final === true) throw error;
      if (answer.status === 429 && rateLimitRetries < settings.maxRateLimitRetries) {
        retry = ++rateLimitRetries;
        delayMs = answer.retryAfterMs ?? settings.pollIntervalMs;
      } else if (transientStatuses.has(answer.status) && serverRetries < settings.maxRetries) {
        retry = ++serverRetries;
        delayMs = answer.retryAfterMs ?? settings.serverErrorDelayMs;
      } else {
        throw error;
      }
      settings.onRetry?.({ method, status: answer.status, code: error.code, retry, delayMs });
      await scope.pause(delayMs);
    }
  };

  return { call };
};

export type Transport = ReturnType<typeof createTransport>;
