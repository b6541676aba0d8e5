import { request as httpRequest } from 'node:http';
import { Effect } from 'effect';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { framesOf } from '../support/sse.js';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';
import { assertMatchesOpenApi } from './support/openapi.js';

/**
 * Random HTTP thrown at `POST /v1/chat/completions` (contract 13), in process and over a socket: bodies shaped like
 * chat completions (messages of every role, content parts, tool calls, parameters, tools, stream options) and not,
 * methods, paths under /v1/chat, keys, Idempotency-Keys and Content-Types. Whatever comes in, the answer has a
 * contract status; an error is in OpenAI's shape with the code and type of its status; a success is a
 * `chat.completion`, or a stream of `chat.completion.chunk`s that ends with `[DONE]`; nothing leaks internals or key
 * material, and nothing makes the service answer 500. Two models: `echo`, and `llm` (the openai provider, against a
 * fake upstream), so that parameters and tools that pass reach an upstream.
 */

const codeFor: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'invalid_request',
  422: 'idempotency_key_reused',
  429: 'rate_limited',
  431: 'invalid_request',
  503: 'server_error',
};
const typeFor = (status: number) =>
  status === 401
    ? 'authentication_error'
    : status === 403
      ? 'permission_error'
      : status === 429
        ? 'rate_limit_error'
        : status >= 500
          ? 'server_error'
          : 'invalid_request_error';
/** 431 only comes from Node's parser over a socket (headers over 16 KB), before any route. */
const allowedStatuses = [200, ...Object.keys(codeFor).map(Number)].filter((status) => status !== 431);

const headerValue = fc.string({
  unit: fc.integer({ min: 0x20, max: 0xfe }).map((c) => String.fromCharCode(c === 0x7f ? 0xff : c)),
});

type Known = { key: string; suspendedKey: string; revokedKey: string };

const arbitraries = (known: Known) => {
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  const text = fc.oneof(fc.string({ maxLength: 40 }), fc.constantFrom('', '  ', '\ud800', 'x'.repeat(250)));
  const name = fc.oneof(fc.constantFrom('weather', 'look_up', 'a-b'), fc.string({ maxLength: 70 }), anyJson);
  const part = fc.oneof(
    { weight: 3, arbitrary: fc.record({ type: fc.constant('text'), text }) },
    fc.record(
      {
        type: fc.oneof(fc.constantFrom('image_url', 'input_audio', 'file', 'refusal', 'input_text'), anyJson),
        text: anyJson,
        image_url: anyJson,
      },
      { requiredKeys: [] },
    ),
    anyJson,
  );
  const content = fc.oneof(
    { weight: 3, arbitrary: text },
    fc.array(part, { maxLength: 3 }),
    fc.constant(null),
    anyJson,
  );
  const toolCall = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record({
        id: fc.oneof(fc.constantFrom('call_1', 'call_2'), fc.string({ maxLength: 300 })),
        type: fc.constant('function'),
        function: fc.record({ name, arguments: fc.oneof(fc.constant('{"city":"Paris"}'), text, anyJson) }),
      }),
    },
    anyJson,
  );
  const message = fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record(
        {
          role: fc.constantFrom('system', 'developer', 'user', 'assistant', 'tool'),
          content,
          tool_calls: fc.oneof(fc.array(toolCall, { maxLength: 2 }), anyJson),
          tool_call_id: fc.oneof(fc.constantFrom('call_1'), fc.string({ maxLength: 300 }), anyJson),
          name: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(null, '') }, fc.string({ maxLength: 5 })),
          refusal: fc.oneof(fc.constant(null), anyJson),
        },
        { requiredKeys: ['role', 'content'] },
      ),
    },
    fc.record(
      { role: fc.oneof(fc.constantFrom('function', 'robot'), anyJson), content: anyJson },
      { requiredKeys: [] },
    ),
    anyJson,
  );
  const tool = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.record(
        {
          type: fc.constant('function'),
          function: fc.record(
            {
              name,
              description: fc.oneof(text, anyJson),
              parameters: fc.oneof(fc.constant({ type: 'object', properties: {} }), anyJson),
              strict: fc.oneof(fc.boolean(), anyJson),
            },
            { requiredKeys: ['name'] },
          ),
        },
        { requiredKeys: ['type', 'function'] },
      ),
    },
    fc.record({ type: fc.oneof(fc.constantFrom('web_search', 'file_search'), anyJson) }),
    anyJson,
  );
  const number = (min: number, max: number) =>
    fc.oneof({ weight: 3, arbitrary: fc.double({ min, max, noNaN: true }) }, fc.integer(), anyJson);
  const create = fc.record(
    {
      model: fc.oneof({ weight: 6, arbitrary: fc.constantFrom('echo', 'llm') }, fc.string({ maxLength: 10 }), anyJson),
      messages: fc.oneof(
        { weight: 6, arbitrary: fc.array(message, { minLength: 1, maxLength: 4 }) },
        fc.constant([]),
        anyJson,
      ),
      stream: fc.oneof({ weight: 3, arbitrary: fc.boolean() }, anyJson),
      stream_options: fc.oneof(
        fc.record({ include_usage: fc.oneof(fc.boolean(), anyJson) }, { requiredKeys: [] }),
        anyJson,
      ),
      temperature: number(0, 2),
      top_p: number(0, 1),
      max_tokens: fc.oneof(fc.integer({ min: -1, max: 5_000 }), anyJson),
      max_completion_tokens: fc.oneof(fc.integer({ min: 1, max: 5_000 }), anyJson),
      stop: fc.oneof(text, fc.array(text, { maxLength: 20 }), anyJson),
      seed: fc.oneof(fc.integer(), anyJson),
      presence_penalty: number(-2, 2),
      frequency_penalty: number(-2, 2),
      response_format: fc.oneof(
        fc.record({ type: fc.constantFrom('text', 'json_object') }),
        fc.record({
          type: fc.constant('json_schema'),
          json_schema: fc.record({ name, schema: fc.oneof(fc.constant({ type: 'object' }), anyJson) }),
        }),
        anyJson,
      ),
      tools: fc.oneof(fc.array(tool, { maxLength: 3 }), anyJson),
      tool_choice: fc.oneof(
        fc.constantFrom('none', 'auto', 'required'),
        fc.record({ type: fc.constant('function'), function: fc.record({ name }) }),
        anyJson,
      ),
      parallel_tool_calls: fc.oneof(fc.boolean(), anyJson),
      user: fc.oneof(text, anyJson),
      n: fc.oneof(fc.constantFrom(1, 2, null), anyJson),
      logprobs: fc.oneof(fc.boolean(), anyJson),
      top_logprobs: fc.oneof(fc.integer({ min: 0, max: 20 }), fc.constant(null)),
      store: fc.oneof(fc.boolean(), anyJson),
      metadata: anyJson,
      audio: fc.oneof(fc.constant(null), anyJson),
      surprise: anyJson,
    },
    { requiredKeys: [] },
  );
  /** Bodies within every rule: conversations with tool calls and results, every parameter, tools for `llm`. */
  const plain = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => s.trim() !== '' && !/\p{Cs}/u.test(s));
  const validMessage = fc.oneof(
    fc.record({ role: fc.constantFrom('user', 'system', 'developer'), content: plain }),
    fc.record({
      role: fc.constant('user'),
      content: fc.array(fc.record({ type: fc.constant('text'), text: plain }), { minLength: 1, maxLength: 2 }),
    }),
    fc.record({
      role: fc.constant('assistant'),
      content: fc.oneof(fc.constant(null), plain),
      tool_calls: fc.constant([{ id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{}' } }]),
    }),
    fc.record({ role: fc.constant('tool'), tool_call_id: fc.constant('call_1'), content: plain }),
  );
  const validTool = fc.record({
    type: fc.constant('function'),
    function: fc.record(
      {
        name: fc.stringMatching(/^[A-Za-z0-9_-]{1,64}$/),
        description: plain,
        parameters: fc.constant({ type: 'object', properties: { city: { type: 'string' } } }),
        strict: fc.boolean(),
      },
      { requiredKeys: ['name'] },
    ),
  });
  const valid = fc.record(
    {
      model: fc.constantFrom('echo', 'llm'),
      messages: fc
        .array(validMessage, { maxLength: 3 })
        .map((messages) => [...messages, { role: 'user', content: 'a question' }]),
      stream: fc.boolean(),
      stream_options: fc.record({ include_usage: fc.boolean() }, { requiredKeys: [] }),
      temperature: fc.double({ min: 0, max: 2, noNaN: true }),
      top_p: fc.double({ min: 0, max: 1, noNaN: true }),
      max_tokens: fc.integer({ min: 1, max: 4_000 }),
      max_completion_tokens: fc.integer({ min: 1, max: 4_000 }),
      stop: fc.oneof(plain, fc.array(plain, { maxLength: 4 })),
      seed: fc.integer(),
      presence_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
      frequency_penalty: fc.double({ min: -2, max: 2, noNaN: true }),
      response_format: fc.record({ type: fc.constantFrom('text', 'json_object') }),
      user: fc.string({ maxLength: 20 }),
      n: fc.constant(1),
      logprobs: fc.constant(false),
      store: fc.boolean(),
      metadata: fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 3 }),
      tools: fc.uniqueArray(validTool, { maxLength: 3, selector: (tool) => tool.function.name }),
      tool_choice: fc.constantFrom('none', 'auto'),
      parallel_tool_calls: fc.boolean(),
    },
    { requiredKeys: ['model', 'messages'] },
  );
  const body = fc.option(
    fc.oneof(
      { weight: 10, arbitrary: valid.map((value) => JSON.stringify(value)) },
      { weight: 8, arbitrary: create.map((value) => JSON.stringify(value)) },
      anyJson.map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 100 }),
      fc.uint8Array({ maxLength: 200 }),
      fc.string({ minLength: 3_000, maxLength: 6_000 }),
      fc.constant('{"model": "echo", "messages": [{"role": "user", "content": "unterminated'),
    ),
    { nil: undefined },
  );
  const target = fc.oneof(
    { weight: 30, arbitrary: fc.constant({ method: 'POST', path: '/v1/chat/completions' }) },
    fc.record({
      method: fc.constantFrom('GET', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
      path: fc.constant('/v1/chat/completions'),
    }),
    fc.record({
      method: fc.constantFrom('POST', 'GET'),
      path: fc.oneof(
        fc.constantFrom('/v1/chat', '/v1/chat/', '/v1/chat/completions/', '/v1/chat/completions/x'),
        fc.webSegment().map((segment) => `/v1/chat/${segment}`),
      ),
    }),
  );
  const authorization = fc.option(
    fc.oneof(
      { weight: 10, arbitrary: fc.constant(`Bearer ${known.key}`) },
      fc.constantFrom(`Bearer ${known.suspendedKey}`, `Bearer ${known.revokedKey}`, known.key, 'Bearer'),
      headerValue.map((v) => `Bearer ${v}`),
    ),
    { nil: undefined },
  );
  const contentType = fc.option(
    fc.oneof(
      { weight: 30, arbitrary: fc.constant('application/json') },
      fc.constantFrom('application/json; charset=utf-8', 'text/plain', 'text/event-stream'),
      headerValue,
    ),
    { nil: undefined, freq: 30 },
  );
  const idempotencyKey = fc.oneof(
    { weight: 12, arbitrary: fc.constant(undefined) },
    { weight: 2, arbitrary: fc.constantFrom('key-1', 'key-2') },
    fc.constantFrom('x'.repeat(256), 'has space'),
    headerValue,
  );
  return fc
    .record({ target, authorization, contentType, idempotencyKey, body })
    .map(({ target: { method, path }, ...rest }) => ({ method, path, ...rest }));
};

type Case = ReturnType<typeof arbitraries> extends fc.Arbitrary<infer T> ? T : never;

const initOf = (c: Case): RequestInit => {
  const headers = new Headers();
  if (c.authorization !== undefined) headers.set('authorization', c.authorization);
  if (c.contentType !== undefined) headers.set('content-type', c.contentType);
  if (c.idempotencyKey !== undefined) headers.set('idempotency-key', c.idempotencyKey);
  const bodyAllowed = !['GET', 'HEAD'].includes(c.method);
  return { method: c.method, headers, body: bodyAllowed ? c.body : undefined };
};

type Seen = { readonly status: number; readonly headers: Headers; readonly text: string };

const isRoute = (c: Case, pathname: string) =>
  c.method === 'POST' && (pathname === '/v1/chat/completions' || pathname === '/v1/chat/completions/');

const expectChunk = (chunk: Record<string, unknown>, context: string) => {
  expect(chunk, context).toMatchObject({
    id: expect.stringMatching(/^chatcmpl-[A-Za-z0-9_-]{22,}$/),
    object: 'chat.completion.chunk',
    created: expect.any(Number),
    model: expect.stringMatching(/^(echo|llm)$/),
    choices: expect.any(Array),
  });
};

const checkSeen = (label: string, c: Case, seen: Seen, known: Known, allowed = allowedStatuses) => {
  const { status, headers, text } = seen;
  const pathname = new URL(c.path, 'http://airs.test').pathname;
  const context = `${label} ${c.method} ${pathname} -> ${status} ${text.slice(0, 300)}`;
  expect(allowed, context).toContain(status);
  expect(text, context).not.toContain(known.key);
  expect(text, context).not.toMatch(/node_modules|\/work\/|\n\s+at /);
  if (c.method === 'HEAD' && text === '') return;
  if (c.method === 'POST' && pathname === '/v1/chat/completions') {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {}
    // Every answer of the route as its OpenAPI document says: status, headers, body, or each event of a stream.
    assertMatchesOpenApi({ method: c.method, path: pathname, status, headers, body, text });
  }
  if (status === 431) return;
  if (status === 200 && headers.get('content-type')?.startsWith('text/event-stream')) {
    expect(isRoute(c, pathname), context).toBe(true);
    const frames = framesOf(text);
    const last = frames.at(-1);
    const data = frames.flatMap((frame) => (frame.kind === 'data' ? [frame.data as Record<string, unknown>] : []));
    for (const chunk of data) if (!('error' in chunk)) expectChunk(chunk, context);
    // A stream ends with [DONE], or with an error event (never here: the models answer).
    expect(last, context).toEqual({ kind: 'done' });
    return;
  }
  expect(headers.get('content-type'), context).toMatch(/^application\/json\b/);
  const body = JSON.parse(text) as Record<string, unknown>;
  if (status === 200) {
    expect(isRoute(c, pathname), context).toBe(true);
    expect(body, context).toMatchObject({
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant' }, finish_reason: expect.any(String), logprobs: null }],
    });
    expect(headers.get('x-request-id'), context).toMatch(/^req_/);
  } else {
    expect(Object.keys(body), context).toEqual(['error']);
    const error = body.error as Record<string, unknown>;
    expect(Object.keys(error).sort(), context).toEqual(['code', 'message', 'param', 'type']);
    // A 404 is `not_found`, or OpenAI's `model_not_found` for a model that does not exist (contract 21).
    expect(error.code, context).toBe(
      status === 404 && error.code === 'model_not_found' && error.param === 'model'
        ? 'model_not_found'
        : codeFor[status],
    );
    expect(error.type, context).toBe(typeFor(status));
    expect(typeof error.message, context).toBe('string');
    expect(error.param === null || typeof error.param === 'string', context).toBe(true);
    if (status === 405) expect(headers.get('allow'), context).toBe('POST');
    if (status === 401) expect(headers.get('www-authenticate'), context).toMatch(/^Bearer/);
  }
  if (isRoute(c, pathname) && ![401, 403, 503].includes(status))
    expect(headers.get('ratelimit-policy'), context).toBe('"submits";q=30000;w=60');
};

/** One call over a real socket with node:http, which sends header values as given. */
const overSocket = (url: string, c: Case) =>
  new Promise<Seen>((resolve, reject) => {
    const init = initOf(c);
    const body =
      init.body === undefined || init.body === null ? undefined : Buffer.from(init.body as string | Uint8Array);
    const headers: Record<string, string> = Object.fromEntries(new Headers(init.headers).entries());
    if (body !== undefined) headers['content-length'] = String(body.length);
    const call = httpRequest(`${url}${c.path}`, { method: c.method, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        const answerHeaders = new Headers();
        for (const [name, value] of Object.entries(response.headers))
          if (value !== undefined) answerHeaders.set(name, Array.isArray(value) ? value.join(', ') : value);
        resolve({ status: response.statusCode ?? 0, headers: answerHeaders, text: Buffer.concat(chunks).toString() });
      });
    });
    call.on('error', reject);
    call.end(body);
  });

describe('POST /v1/chat/completions under random input', () => {
  let app: TestApp;
  let known: Known;
  let server: Awaited<ReturnType<typeof listen>>;
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    app = await startTestApp({
      config: {
        models: [
          { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
          {
            id: 'llm',
            provider: 'openai',
            baseUrl: upstream.baseUrl,
            upstreamModel: 'tiny',
            timeoutMs: 10_000,
            maxRetries: 0,
          },
        ],
        maxBodyBytes: 4096,
        maxPromptChars: 200,
        processing: { concurrency: 8, maxAttempts: 1 },
      },
    });
    server = await listen(app);
    const owner = await app.account('enterprise');
    const suspended = await app.account();
    const revoked = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    await Effect.runPromise(app.accounts.revokeKey(revoked.keyId));
    known = { key: owner.key, suspendedKey: suspended.key, revokedKey: revoked.key };
  });
  afterAll(async () => {
    await server?.close();
    await app?.stop();
    await upstream?.close();
  });

  it('answers every random call in process with a contract status, OpenAI’s error shape or a completion, never a 500', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraries(known), async (c) => {
        const response = await app.http.request(`http://airs.test${c.path}`, initOf(c));
        const seen = { status: response.status, headers: response.headers, text: await response.text() };
        checkSeen('in-process', c, seen, known);
      }),
      { numRuns: 300 },
    );
  }, 180_000);

  it('answers every random call over a socket the same way', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraries(known), async (c) => {
        checkSeen('socket', c, await overSocket(server.url, c), known, [...allowedStatuses, 431]);
      }),
      { numRuns: 150 },
    );
  }, 180_000);

  it('still completes a chat completion after the random calls', async () => {
    const answer = await app.call('POST', '/v1/chat/completions', {
      key: known.key,
      body: { model: 'llm', messages: [{ role: 'user', content: 'still here' }] },
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ choices: [{ message: { content: 'upstream says: still here' } }] });
  });
});
