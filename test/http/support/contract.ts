import { afterEach, beforeEach, expect } from 'vitest';
import { ManualClock } from '../../../src/ports/Clock.js';
import {
  type CallInit,
  listen,
  requestInit,
  startTestApp,
  type TestApp,
  type TestConfig,
} from '../../support/testApp.js';
import { assertMatchesOpenApi } from './openapi.js';

/**
 * Shared ground of the HTTP contract suites: one config, two transports (in-process and a real socket), and
 * the assertions every suite makes about the contract's error shape and rate-limit headers.
 */

/** Models for every case: instant, one that is still working when polled, and one that always times out. */
export const contractConfig: TestConfig = {
  models: [
    { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
    { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
    { id: 'doomed', provider: 'echo', delayMs: 60_000, timeoutMs: 1 },
  ],
  maxBodyBytes: 1024,
  maxPromptChars: 100,
  processing: { concurrency: 16, maxAttempts: 1 },
};

export const requestIdPattern = /^req_[A-Za-z0-9_-]{22,}$/;
export const dayMs = 86_400_000;

/** An answer with its body already read, so no connection is left holding an unread body. */
export type Answer = {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  readonly body: unknown;
};

export type Client = {
  /** A call built like the harness builds it: `key` becomes a Bearer header, a body is sent as JSON. */
  call(method: string, path: string, init?: CallInit): Promise<Answer>;
  /** A call with a hand-made RequestInit (streamed bodies, raw headers). */
  send(method: string, path: string, init: RequestInit): Promise<Answer>;
  close(): Promise<void>;
};

export type Transport = { readonly name: string; open(app: TestApp): Promise<Client> };

/** Reads an answer, and fails the test when it breaks the OpenAPI document (docs/openapi.json). */
const read = async (method: string, path: string, response: Response): Promise<Answer> => {
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const answer = { status: response.status, headers: response.headers, text, body };
  assertMatchesOpenApi({ method, path, ...answer });
  return answer;
};

const clientFor = (fetcher: (path: string, init: RequestInit) => Promise<Response>, close: () => Promise<void>) => ({
  call: async (method: string, path: string, init?: CallInit) =>
    read(method, path, await fetcher(path, requestInit(method, init))),
  send: async (method: string, path: string, init: RequestInit) =>
    read(method, path, await fetcher(path, { ...init, method })),
  close,
});

export const transports: readonly Transport[] = [
  {
    name: 'in-process',
    open: async (app) =>
      clientFor(
        async (path, init) => app.http.request(`http://airs.test${path}`, init),
        async () => {},
      ),
  },
  {
    name: 'over a socket',
    open: async (app) => {
      const server = await listen(app);
      return clientFor((path, init) => fetch(server.url + path, init), server.close);
    },
  },
];

export type Env = { app: TestApp; client: Client; clock: ManualClock };

/** A fresh app (fresh data directory, manual clock, fresh budgets) and a client for every test of the suite. */
export const useContractApp = (transport: Transport): Env => {
  const env = {} as Env;
  beforeEach(async () => {
    env.clock = new ManualClock();
    env.app = await startTestApp({ config: contractConfig, clock: env.clock });
    env.client = await transport.open(env.app);
  });
  afterEach(async () => {
    await env.client?.close();
    await env.app?.stop();
  });
  return env;
};

export type ErrorBody = { error: { code: string; message: string; details?: Record<string, unknown> } };

/** Asserts the contract's one error shape, its status and code, and JSON content type; returns the body. */
export const expectError = (answer: Answer, status: number, code: string): ErrorBody['error'] => {
  expect({ status: answer.status, text: answer.text }).toMatchObject({ status });
  expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
  const body = answer.body as ErrorBody;
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  const extra = Object.keys(body.error).filter((name) => !['code', 'message', 'details'].includes(name));
  expect(extra).toEqual([]);
  if (body.error.details !== undefined) {
    expect(typeof body.error.details).toBe('object');
    expect(Array.isArray(body.error.details)).toBe(false);
  }
  return body.error;
};

/** Asserts the IETF RateLimit-Policy and RateLimit headers in structured-field form; returns what is left. */
export const expectRateLimitHeaders = (answer: Answer, budget: 'submits' | 'polls', limit: number) => {
  expect(answer.headers.get('ratelimit-policy')).toBe(`"${budget}";q=${limit};w=60`);
  const state = answer.headers.get('ratelimit') ?? '';
  const match = new RegExp(`^"${budget}";r=(\\d+);t=(\\d+)$`).exec(state);
  expect(match, `RateLimit header "${state}"`).not.toBeNull();
  return { remaining: Number(match?.[1]), reset: Number(match?.[2]) };
};

/** Submits a prompt and returns its request id. */
export const submit = async (client: Client, key: string, model = 'echo', prompt = 'hello'): Promise<string> => {
  const answer = await client.call('POST', '/v1/ai', { key, body: { model, prompt } });
  expect(answer.status).toBe(202);
  return (answer.body as { request_id: string }).request_id;
};

export const poll = (client: Client, key: string, reqId: string) =>
  client.call('GET', `/v1/ai?req_id=${encodeURIComponent(reqId)}`, { key });

/** A body streamed in chunks, so it is sent without Content-Length (chunked over a socket). */
export const streamedBody = (text: string, chunkSize = 256): RequestInit => {
  const bytes = new TextEncoder().encode(text);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += chunkSize) controller.enqueue(bytes.slice(at, at + chunkSize));
      controller.close();
    },
  });
  return { body: stream, duplex: 'half' } as RequestInit;
};
