/** The shapes the client speaks: wire bodies (field names exactly as the API sends them) and options. */

/** `POST /v1/ai` answered `202`. Fields the server adds beyond the specified ones are kept. */
export type Submitted = {
  readonly request_id: string;
  readonly model: string;
  readonly [field: string]: unknown;
};

/** `GET /v1/ai` while the request is still being worked on. */
export type QueuedPoll = {
  readonly req_id: string;
  readonly status: 'queued';
  readonly model?: string;
  readonly [field: string]: unknown;
};

/** `GET /v1/ai` once the request is done: `response` holds the generated text. */
export type CompletedPoll = {
  readonly req_id: string;
  readonly status: 'completed';
  readonly model: string;
  readonly response: string;
  readonly [field: string]: unknown;
};

export type PollBody = QueuedPoll | CompletedPoll;

/** Anything shaped like the platform `fetch` for a URL string (an in-process handler will do). */
export type FetchLike = (input: string, init: RequestInit) => Promise<Response> | Response;

/** Waits `ms`; rejects (with `signal.reason`) if `signal` aborts first. */
export type SleepFn = (ms: number, signal?: AbortSignal) => Promise<void>;

/** Told after every answered poll. */
export type PollInfo = {
  readonly reqId: string;
  /** Polls answered so far, this one included. */
  readonly polls: number;
  /** Since `wait` (or `run`) started, by the client's `now()`. */
  readonly elapsedMs: number;
  readonly body: PollBody;
  /** How long the client will wait before the next poll; absent once completed. */
  readonly nextPollInMs: number | undefined;
};

/**
 * Told before the client waits to repeat a call the service refused for now (429, 500, 502, 503, 504), or whose
 * answer was lost on the network (`status` 0, `code` `network_error`).
 */
export type RetryInfo = {
  readonly method: 'GET' | 'POST';
  /** The answer's status; `0` when no answer arrived (the connection failed after it was made). */
  readonly status: number;
  readonly code: string;
  /** 1 for the first retry of this call. */
  readonly retry: number;
  readonly delayMs: number;
};

export type ClientOptions = {
  /** Where the service listens, e.g. `http://127.0.0.1:8080` (a path prefix is kept; `/v1/ai` is appended). */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Defaults to the global `fetch`. */
  readonly fetch?: FetchLike;
  /** Defaults to an abortable `setTimeout`. Tests pass one that records delays instead of sleeping. */
  readonly sleep?: SleepFn;
  /** Epoch milliseconds; defaults to `Date.now`. Used for deadlines and elapsed times. */
  readonly now?: () => number;
  /**
   * In `run`, the pause between the 202 and the first poll, when polls are not held (`pollWaitSeconds: 0`, or a
   * server that does not hold them: then after the first `queued`). Default 200 ms.
   */
  readonly firstPollDelayMs?: number;
  /**
   * How long each poll of `wait` and `run` asks the service to hold it until the request is done (`Prefer: wait=N`,
   * whole seconds, never past `timeoutMs`): the answer comes as soon as the request is completed, and a poll the
   * service held answered `queued` is followed at once by the next. A service that does not hold polls is polled as
   * the specification says (`Retry-After`, else `pollIntervalMs`). Default 30; 0 turns long polls off.
   */
  readonly pollWaitSeconds?: number;
  /** Wait between polls when a queued answer carries no `Retry-After`. Default 5000 (the specification's 5 s). */
  readonly pollIntervalMs?: number;
  /** Wait after a 500/503 without `Retry-After`, and after a lost answer. Default 30000 (the specification's 30 s). */
  readonly serverErrorDelayMs?: number;
  /**
   * Retries of one call after 500/502/503/504 or a lost answer before it fails with the last answer (or
   * `network_error`). Default 3. A lost answer is one whose connection failed after it was made (reset, closed, the
   * body cut off): a `GET` is always safe to repeat, and a submit is too, since every submit carries an
   * `Idempotency-Key` (see `SubmitOptions`) and the service answers its repeat with the request it already made. A
   * service that cannot be reached at all (connection refused, unknown host) fails at once with `network_error`,
   * unless the call is already being retried.
   */
  readonly maxRetries?: number;
  /** Retries of one call after 429 before it fails with `rate_limited`. Default 10. */
  readonly maxRateLimitRetries?: number;
  readonly onRetry?: (info: RetryInfo) => void;
};

export type CallOptions = {
  /** Aborting rejects the pending call at once with `signal.reason`, also during a wait. */
  readonly signal?: AbortSignal;
};

export type SubmitOptions = CallOptions & {
  /**
   * The submit's `Idempotency-Key` (1 to 255 visible ASCII characters; anything else rejects with a TypeError before
   * anything is sent). By default every submit gets a new random key (a UUID). It is sent with every attempt of this
   * submit, so a submit retried after a lost answer makes one request. Pass your own key to make a submit safe to
   * repeat across calls or processes (e.g. the id of a job in your own queue): within 24 hours the service answers a
   * repeat with the same body with the same `request_id`, and a repeat with another body with
   * `AirsIdempotencyError` (`422 idempotency_key_reused`), which is never retried.
   */
  readonly idempotencyKey?: string;
};

export type WaitOptions = CallOptions & {
  /** Give up with `AirsTimeoutError` once this much time (by `now()`) has passed. No limit by default. */
  readonly timeoutMs?: number;
  readonly onPoll?: (info: PollInfo) => void;
};

export type RunOptions = WaitOptions & {
  /** Told once the request is accepted (before the first poll). */
  readonly onSubmitted?: (submitted: Submitted) => void;
  /** The submit's `Idempotency-Key`; a new random one by default. See `SubmitOptions`. */
  readonly idempotencyKey?: string;
};

export type AirsClient = {
  /**
   * `POST /v1/ai`: queues the prompt; resolves with the `202` body (`request_id`, `model`). Sent with an
   * `Idempotency-Key` (one per submit, the same on each of its attempts), so it is retried after a lost answer too.
   */
  submit(model: string, prompt: string, options?: SubmitOptions): Promise<Submitted>;
  /** `GET /v1/ai?req_id=…` once: the request's current state. */
  get(reqId: string, options?: CallOptions): Promise<PollBody>;
  /** Polls until the request is completed: long polls (`pollWaitSeconds`), else as the specification says (5 s, or
   * `Retry-After`). */
  wait(reqId: string, options?: WaitOptions): Promise<CompletedPoll>;
  /** `submit` then `wait`; `timeoutMs` covers both; `idempotencyKey` is the submit's. */
  run(model: string, prompt: string, options?: RunOptions): Promise<CompletedPoll>;
};
