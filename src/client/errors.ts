/**
 * The errors the client throws. Every failure is one of these two classes (or `AirsIdempotencyError`, a kind of
 * `AirsError`), or, when the caller's `signal` aborts, the signal's own `reason` (the platform's convention, as
 * `fetch` does).
 */

/** What the service answered with an error status, or why no usable answer arrived. */
export type AirsErrorInit = {
  /** The HTTP status; `0` when no answer arrived at all (network failure). */
  readonly status: number;
  /**
   * The contract's error code (`invalid_request`, `unauthorized`, `forbidden`, `not_found`, `rate_limited`,
   * `server_error`, `idempotency_key_reused`, …), or one of the client's own: `network_error` (no answer: the
   * service could not be reached, or the connection was lost before its answer arrived, and the client's retries, if
   * any, ran out), `invalid_response` (an answer that is not what the API promises).
   */
  readonly code: string;
  readonly message: string;
  /** The optional machine-readable `details` object of the error body. */
  readonly details?: Readonly<Record<string, unknown>> | undefined;
  /** The server's `Retry-After`, in milliseconds, when it sent one. */
  readonly retryAfterMs?: number | undefined;
  readonly cause?: unknown;
};

/** A failure the service reported (or a missing/garbled answer). Check `status` and `code`. */
export class AirsError extends Error {
  override readonly name: string = 'AirsError';
  readonly status: number;
  readonly code: string;
  readonly details: Readonly<Record<string, unknown>> | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(init: AirsErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.code = init.code;
    this.details = init.details;
    this.retryAfterMs = init.retryAfterMs;
  }
}

/**
 * `422 idempotency_key_reused`: the submit's `Idempotency-Key` was already used by the account, within the last 24
 * hours, for a submit with another body. Never retried: pass a new key (or none) for a new request.
 */
export class AirsIdempotencyError extends AirsError {
  override readonly name: string = 'AirsIdempotencyError';
  /** The key the submit was sent with. */
  readonly idempotencyKey: string;

  constructor(init: AirsErrorInit & { readonly idempotencyKey: string }) {
    super(init);
    this.idempotencyKey = init.idempotencyKey;
  }
}

/** The `timeoutMs` given to `wait` or `run` passed before the request completed. */
export class AirsTimeoutError extends Error {
  override readonly name = 'AirsTimeoutError';
  readonly timeoutMs: number;
  /** The request that was being waited for, when it had been accepted. */
  readonly reqId: string | undefined;
  /** Polls answered before time ran out. */
  readonly polls: number;

  constructor(init: { readonly timeoutMs: number; readonly reqId?: string | undefined; readonly polls: number }) {
    const what = init.reqId === undefined ? 'the request was not accepted' : `${init.reqId} did not complete`;
    super(`${what} within ${formatSeconds(init.timeoutMs)} (${init.polls} ${init.polls === 1 ? 'poll' : 'polls'})`);
    this.timeoutMs = init.timeoutMs;
    this.reqId = init.reqId;
    this.polls = init.polls;
  }
}

const formatSeconds = (ms: number) => `${Number((ms / 1000).toFixed(3))} s`;

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * The contract's error body `{"error": {code, message, details?}}` as an AirsError; a fallback for any other body. A
 * submit's `422 idempotency_key_reused` is an AirsIdempotencyError naming its key.
 */
export const errorFromResponse = (
  status: number,
  body: unknown,
  retryAfterMs: number | undefined,
  idempotencyKey?: string,
): AirsError => {
  const error = isRecord(body) && isRecord(body.error) ? body.error : undefined;
  const code = typeof error?.code === 'string' ? error.code : status >= 500 ? 'server_error' : 'http_error';
  const message = typeof error?.message === 'string' ? error.message : `the service answered HTTP ${status}`;
  const details = isRecord(error?.details) ? error.details : undefined;
  if (code === 'idempotency_key_reused' && idempotencyKey !== undefined) {
    return new AirsIdempotencyError({ status, code, message, details, retryAfterMs, idempotencyKey });
  }
  return new AirsError({ status, code, message, details, retryAfterMs });
};

/** A success status whose body is not what the API promises. */
export const invalidResponse = (status: number, what: string): AirsError =>
  new AirsError({ status, code: 'invalid_response', message: `unexpected answer from the service: ${what}` });
