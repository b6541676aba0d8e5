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
  readonly pollWaitSeconds: number;
  readonly serverErrorDelayMs: number;
  readonly maxRetries: number;
  readonly maxRateLimitRetries: number;
  readonly onRetry: ((info: RetryInfo) => void) | undefined;
};

/**
 * A successful (2xx) answer: its status, its body parsed as JSON (`undefined` if it is not JSON), `Retry-After`, and
 * whether the service says it held the call as asked (`Preference-Applied: wait=…`).
 */
export type Answer = {
  readonly status: number;
  readonly body: unknown;
  readonly retryAfterMs: number | undefined;
  readonly waitApplied: boolean;
};

/** `Preference-Applied` names the `wait` preference (RFC 7240: a list of preferences, names without case). */
const appliesWait = (header: string | null): boolean =>
  (header ?? '')
    .slice(0, 1_000)
    .split(',')
    .some((preference) => /^wait\s*=/i.test(preference.trim()));

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

/**
 * Failures that mean no connection was made, so nothing was sent: nobody listens there (a wrong URL, a stopped
 * server), or the name or the route to it does not exist. Node's `fetch` names them in `cause.code`, also inside an
 * AggregateError when several addresses were tried.
 */
const connectCodes = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const codeOf = (value: unknown): unknown =>
  typeof value === 'object' && value !== null ? (value as { code?: unknown }).code : undefined;

const neverConnected = (error: unknown): boolean => {
  const cause = error instanceof Error ? error.cause : undefined;
  const code = codeOf(cause);
  if (typeof code === 'string') return connectCodes.has(code);
  const errors = cause instanceof AggregateError ? cause.errors : [];
  return errors.length > 0 && errors.every((each) => connectCodes.has(String(codeOf(each))));
};

/** One attempt's end: an answer, or no answer (`fetch` failed, or the body was cut off) as a `network_error`. */
type Attempted =
  | { readonly answered: true; readonly answer: Answer }
  | {
      readonly answered: false;
      readonly error: AirsError;
      /** No connection was made (refused, unknown host): the call cannot have reached the service. */
      readonly neverConnected: boolean;
    };

/** Per-call options of the transport. */
export type CallExtras = {
  /** Sent as `Idempotency-Key` on every attempt of the call (a submit's one key). */
  readonly idempotencyKey?: string | undefined;
  /** Sent as `Prefer: wait=N` (a long poll): the service may hold the call up to `N` seconds. */
  readonly waitSeconds?: number | undefined;
};

/**
 * `/v1/ai` calls: one `fetch` per attempt, bounded retries after 429, 5xx and a lost answer, fail fast on everything
 * else.
 */
export const createTransport = (settings: Settings) => {
  const endpoint = `${settings.baseUrl.replace(/\/+$/, '')}/v1/ai`;

  /** One attempt. Aborting the scope's signal, or reaching its deadline, cancels the `fetch` itself. */
  const attempt = async (
    method: 'GET' | 'POST',
    query: string,
    body: string | undefined,
    scope: Scope,
    extras: CallExtras,
  ): Promise<Attempted> => {
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
    if (extras.idempotencyKey !== undefined) headers['idempotency-key'] = extras.idempotencyKey;
    if (extras.waitSeconds !== undefined) headers.prefer = `wait=${extras.waitSeconds}`;
    try {
      const response = await settings.fetch(`${endpoint}${query}`, {
        method,
        headers,
        body,
        signal: controller.signal,
      });
      const text = await response.text();
      return {
        answered: true,
        answer: {
          status: response.status,
          body: parseJson(text),
          retryAfterMs: parseRetryAfter(response.headers.get('retry-after'), settings.now()),
          waitApplied: appliesWait(response.headers.get('preference-applied')),
        },
      };
    } catch (error) {
      if (scope.signal?.aborted) throw scope.signal.reason;
      if (timedOut) throw scope.timeoutError();
      const unreached = neverConnected(error);
      return {
        answered: false,
        neverConnected: unreached,
        error: new AirsError({
          status: 0,
          code: 'network_error',
          message: unreached
            ? `cannot reach ${settings.baseUrl}: ${describe(error)}`
            : `no answer from ${settings.baseUrl}: ${describe(error)}`,
          cause: error,
        }),
      };
    } finally {
      clearTimeout(timer);
      scope.signal?.removeEventListener('abort', onAbort);
    }
  };

  /**
   * Calls until a 2xx (returned) or an answer that is not retried, or retries run out (thrown as AirsError).
   *
   * A lost answer (the connection failed after it was made: reset, closed, the body cut off) is retried like a 5xx
   * when asking again is safe: always for a `GET`, and for a `POST` that carries an `Idempotency-Key` (the service
   * answers a repeat with the request the first attempt made). A service that cannot be reached at all on the first
   * attempt (refused, unknown host) fails at once, as before: nothing was sent, and a wrong URL should not cost
   * minutes. Once a call is being retried, a refused connection is a restarting service and is retried too.
   */
  const call = async (
    method: 'GET' | 'POST',
    query: string,
    body: string | undefined,
    scope: Scope,
    extras: CallExtras = {},
  ): Promise<Answer> => {
    const safeToRepeat = method === 'GET' || extras.idempotencyKey !== undefined;
    let serverRetries = 0;
    let rateLimitRetries = 0;
    for (;;) {
      const attempted = await attempt(method, query, body, scope, extras);
      let delayMs: number;
      let retry: number;
      let status: number;
      let code: string;
      if (!attempted.answered) {
        const retrying = serverRetries + rateLimitRetries > 0;
        if (!(safeToRepeat && (retrying || !attempted.neverConnected) && serverRetries < settings.maxRetries)) {
          throw attempted.error;
        }
        retry = ++serverRetries;
        delayMs = settings.serverErrorDelayMs;
        status = 0;
        code = attempted.error.code;
      } else {
        const { answer } = attempted;
        if (answer.status >= 200 && answer.status < 300) return answer;
        const error = errorFromResponse(answer.status, answer.body, answer.retryAfterMs, extras.idempotencyKey);
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
        status = answer.status;
        code = error.code;
      }
      settings.onRetry?.({ method, status, code, retry, delayMs });
      await scope.pause(delayMs);
    }
  };

  return { call };
};

export type Transport = ReturnType<typeof createTransport>;
