/**
 * `airs/client`: a small client for the Asynchronous AI Request Service.
 *
 * ```ts
 * import { AirsError, AirsTimeoutError, createClient } from 'airs/client';
 *
 * const airs = createClient({ baseUrl: 'http://127.0.0.1:8080', apiKey: process.env.AIRS_API_KEY! });
 * const done = await airs.run('echo', 'Hello, airs', { timeoutMs: 60_000 });
 * console.log(done.response);
 * ```
 *
 * - `submit(model, prompt, {idempotencyKey})`: `POST /v1/ai`, resolves with `{request_id, model}`. Every submit
 *   carries an `Idempotency-Key` (a new UUID unless given), the same on each of its attempts.
 * - `get(reqId)`: one `GET /v1/ai?req_id=…`.
 * - `wait(reqId, {signal, timeoutMs, onPoll})`: polls every 5 s, or after the server's `Retry-After`.
 * - `run(model, prompt, options)`: both.
 *
 * Every call retries a 429 after `Retry-After`, and a 500/503 or a lost answer (a connection that failed after it
 * was made) after 30 s (or `Retry-After`), a bounded number of times: thanks to the key, a submit whose answer was
 * lost is sent again without making a second request. 400, 401, 403, 404, 422 and a 500 marked final
 * (`details.final`: the request failed for good) fail at once, and so does a service that cannot be reached at all.
 * Failures are `AirsError` (`status`, `code`, `message`, `details`; `AirsIdempotencyError` for a key already used
 * with another body), `AirsTimeoutError` when `timeoutMs` passes, or the signal's `reason` when the caller aborts.
 *
 * Only `fetch`, `AbortController` and `setTimeout` are used: no Node modules, so it runs in browsers too.
 */
export { createClient } from './createClient.js';
export { AirsError, type AirsErrorInit, AirsIdempotencyError, AirsTimeoutError } from './errors.js';
export { isCompleted } from './polling.js';
export { defaultSleep, parseRetryAfter } from './timing.js';
export type {
  AirsClient,
  CallOptions,
  ClientOptions,
  CompletedPoll,
  FetchLike,
  PollBody,
  PollInfo,
  QueuedPoll,
  RetryInfo,
  RunOptions,
  SleepFn,
  SubmitOptions,
  Submitted,
  WaitOptions,
} from './types.js';
