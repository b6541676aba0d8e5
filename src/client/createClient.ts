import { invalidResponse } from './errors.js';
import { checkedIdempotencyKey, newIdempotencyKey } from './idempotency.js';
import { pollOnce, pollUntilCompleted } from './polling.js';
import { Scope } from './scope.js';
import { defaultSleep } from './timing.js';
import { createTransport, type Settings } from './transport.js';
import type { AirsClient, ClientOptions, FetchLike, Submitted } from './types.js';

const nonNegative = (name: string, value: number | undefined, fallback: number): number => {
  if (value === undefined) return fallback;
  if (!(Number.isFinite(value) && value >= 0)) throw new RangeError(`${name} must be a finite number >= 0`);
  return value;
};

const globalFetch = (): FetchLike => {
  if (typeof globalThis.fetch !== 'function') throw new TypeError('no global fetch: pass the fetch option');
  return (input, init) => globalThis.fetch(input, init);
};

const toSubmitted = (status: number, body: unknown): Submitted => {
  const record = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : undefined;
  if (typeof record?.request_id !== 'string' || typeof record.model !== 'string') {
    throw invalidResponse(status, 'a submit answer without request_id and model');
  }
  return record as Submitted;
};

/**
 * A client for the airs API. It speaks plain `fetch` and has no other dependency, so it runs in browsers, Node,
 * Deno and workers alike. All time goes through `sleep` and `now`, which tests replace.
 */
export const createClient = (options: ClientOptions): AirsClient => {
  if (typeof options.baseUrl !== 'string' || !/^https?:\/\//i.test(options.baseUrl)) {
    throw new TypeError('baseUrl must be an http:// or https:// URL');
  }
  if (typeof options.apiKey !== 'string' || options.apiKey.trim() === '') {
    throw new TypeError('apiKey must be a non-empty string');
  }
  const sleep = options.sleep ?? defaultSleep;
  const settings: Settings = {
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    fetch: options.fetch ?? globalFetch(),
    now: options.now ?? (() => Date.now()),
    pollIntervalMs: nonNegative('pollIntervalMs', options.pollIntervalMs, 5_000),
    firstPollDelayMs: nonNegative('firstPollDelayMs', options.firstPollDelayMs, 200),
    pollWaitSeconds: Math.floor(nonNegative('pollWaitSeconds', options.pollWaitSeconds, 30)),
    serverErrorDelayMs: nonNegative('serverErrorDelayMs', options.serverErrorDelayMs, 30_000),
    maxRetries: nonNegative('maxRetries', options.maxRetries, 3),
    maxRateLimitRetries: nonNegative('maxRateLimitRetries', options.maxRateLimitRetries, 10),
    onRetry: options.onRetry,
  };
  const transport = createTransport(settings);
  const scope = (signal?: AbortSignal, timeoutMs?: number) =>
    new Scope({ now: settings.now, sleep }, signal, timeoutMs);

  /** One logical submit: one `Idempotency-Key` (the caller's, else a new one) on each of its attempts. */
  const submitIn = async (model: string, prompt: string, within: Scope, key: string | undefined) => {
    const idempotencyKey = key === undefined ? newIdempotencyKey() : checkedIdempotencyKey(key);
    const answer = await transport.call('POST', '', JSON.stringify({ model, prompt }), within, { idempotencyKey });
    return toSubmitted(answer.status, answer.body);
  };

  return {
    submit: async (model, prompt, submitOptions = {}) =>
      submitIn(model, prompt, scope(submitOptions.signal), submitOptions.idempotencyKey),
    get: async (reqId, callOptions = {}) => (await pollOnce(transport, reqId, scope(callOptions.signal))).body,
    wait: async (reqId, waitOptions = {}) =>
      pollUntilCompleted(
        transport,
        settings,
        reqId,
        scope(waitOptions.signal, waitOptions.timeoutMs),
        waitOptions.onPoll,
      ),
    run: async (model, prompt, runOptions = {}) => {
      const within = scope(runOptions.signal, runOptions.timeoutMs);
      const submitted = await submitIn(model, prompt, within, runOptions.idempotencyKey);
      runOptions.onSubmitted?.(submitted);
      // A fast model is often done a moment after the 202: one short pause spares a 5 s wait on a first `queued`.
      // A long poll needs none (it is held until the answer); a service that does not hold it gets the pause after
      // its first `queued`.
      const longPolls = settings.pollWaitSeconds >= 1;
      if (!longPolls && settings.firstPollDelayMs > 0) await within.pause(settings.firstPollDelayMs);
      return pollUntilCompleted(
        transport,
        settings,
        submitted.request_id,
        within,
        runOptions.onPoll,
        longPolls && settings.firstPollDelayMs > 0 ? settings.firstPollDelayMs : undefined,
      );
    },
  };
};
