import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { dataOf, framesOf } from '../support/sse.js';
import {
  type CallInit,
  eventually,
  loggedEvents,
  startTestApp,
  type TestApp,
  type TestAppOptions,
  type TestConfig,
} from '../support/testApp.js';
import { checkedAnswer } from './support/checkedAnswer.js';

/**
 * `POST /v1/chat/completions` in process (contract 13): OpenAI's `chat.completion` and its chunks over the same
 * requests, limits, queue and log as `/v1/ai`; what airs cannot honour refused naming the field; what clients send by
 * default accepted.
 */

const echo = (id: string, delayMs: number, timeoutMs = 60_000): ModelConfig => ({
  id,
  provider: 'echo',
  delayMs,
  timeoutMs,
});

const chatConfig: TestConfig = {
  models: [echo('echo', 0), echo('slow', 60_000, 120_000), echo('doomed', 60_000, 1)],
  maxBodyBytes: 64 * 1024,
  maxPromptChars: 200,
  processing: { concurrency: 1, maxAttempts: 1 },
};

type Answer = { readonly status: number; readonly headers: Headers; readonly body: Record<string, unknown> };
type OpenAiError = { message: string; type: string; param: string | null; code: string };
type Completion = {
  id: string;
  object: string;
  created: number;
  model: string;
  choices: {
    index: number;
    message: { role: string; content: string | null; refusal: null; tool_calls?: unknown[] };
    finish_reason: string;
    logprobs: null;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null;
};

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});
const start = async (options: TestAppOptions = {}) => {
  const app = await startTestApp({ clock: systemClock, ...options, config: { ...chatConfig, ...options.config } });
  apps.push(app);
  return app;
};

/** A call of the chat route, its answer checked against the OpenAPI document first. */
const chatCall = async (app: TestApp, init: CallInit) =>
  checkedAnswer('POST', '/v1/chat/completions', await app.call('POST', '/v1/chat/completions', init));

const call = async (app: TestApp, method: string, path: string, init?: CallInit): Promise<Answer> => {
  const response =
    method === 'POST' && path === '/v1/chat/completions'
      ? await chatCall(app, init ?? {})
      : await app.call(method, path, init);
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
};

const chat = (app: TestApp, key: string, body: unknown, headers?: Record<string, string>) =>
  call(app, 'POST', '/v1/chat/completions', { key, body, headers });

const hello = [{ role: 'user', content: 'Hello there' }];

const expectOpenAiError = (answer: Answer, status: number, code: string, type: string): OpenAiError => {
  expect({ status: answer.status, body: answer.body }).toMatchObject({ status });
  expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(Object.keys(answer.body)).toEqual(['error']);
  const error = answer.body.error as OpenAiError;
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(error).toMatchObject({ code, type });
  return error;
};

const reqIdOf = (completionId: string) => `req_${completionId.slice('chatcmpl-'.length)}`;

const eventsOf = async (app: TestApp, reqId: string) =>
  (await loggedEvents(app)).filter((e) => 'reqId' in e && e.reqId === reqId);

/** The id of the account's first queued request, once there is one. */
const firstQueued = (app: TestApp) =>
  eventually(async () => {
    const queued = (await loggedEvents(app)).find((e) => e.type === 'RequestQueued');
    return queued !== undefined && 'reqId' in queued ? queued.reqId : undefined;
  }, 30_000);

/**
 * What a create keeps as its input: sent to the `slow` model (which never answers within a test), read from the store
 * while it waits, then cancelled (which ends the waiting call).
 */
const storedInputOf = async (app: TestApp, key: string, body: Record<string, unknown>) => {
  const waiting = chat(app, key, { ...body, model: 'slow' });
  const reqId = await firstQueued(app);
  const text = (await app.store.reads.requestWithText(reqId))?.text ?? 'null';
  await call(app, 'POST', `/v1/responses/resp_${reqId.slice(4)}/cancel`, { key });
  expect((await waiting).status).toBe(404);
  return JSON.parse(text) as { messages: unknown[]; params?: unknown };
};

const remaining = (answer: Answer) => Number(/;r=(\d+);/.exec(answer.headers.get('ratelimit') ?? '')?.[1]);

describe('POST /v1/chat/completions, waiting for the answer', () => {
  it('answers a chat.completion whose id is the request’s under chatcmpl-, with usage, x-request-id, and a submit spent', async () => {
    const app = await start();
    const { key } = await app.account('free');
    const answer = await chat(app, key, { model: 'echo', messages: hello });
    expect(answer.status).toBe(200);
    const completion = answer.body as Completion;
    expect(completion.id).toMatch(/^chatcmpl-[A-Za-z0-9_-]{22,}$/);
    const reqId = reqIdOf(completion.id);
    expect(answer.headers.get('x-request-id')).toBe(reqId);
    expect(completion).toEqual({
      id: completion.id,
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'echo',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: 'Hello there', refusal: null },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
      // echo counts words: two in, two out.
      usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 },
      service_tier: 'default',
    });
    expect(Math.abs(completion.created - Date.now() / 1000)).toBeLessThan(60);
    expect(answer.headers.get('ratelimit-policy')).toBe('"submits";q=60;w=60');
    expect(remaining(answer)).toBe(59);
    // The same request on /v1/ai, in the same log.
    const polled = await call(app, 'GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(polled.body).toMatchObject({ req_id: reqId, status: 'completed', response: 'Hello there' });
    expect((await eventsOf(app, reqId)).map((e) => e.type)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
  });

  it('keeps the conversation and its parameters with the request, as given', async () => {
    const app = await start();
    const { key } = await app.account();
    const stored = await storedInputOf(app, key, {
      messages: [
        { role: 'developer', content: 'Be brief.' },
        {
          role: 'system',
          content: [
            { type: 'text', text: 'Stay' },
            { type: 'text', text: 'polite.' },
          ],
        },
        { role: 'user', content: 'What is up?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"at":"sky"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'the sky' },
        { role: 'assistant', content: [{ type: 'text', text: 'The sky.' }] },
        { role: 'user', content: 'And now?' },
      ],
      temperature: 0.2,
      top_p: 0.9,
      max_tokens: 50,
      max_completion_tokens: 60,
      stop: ['\n\n', 'END'],
      seed: 7,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      response_format: { type: 'json_object' },
      user: 'user-42',
    });
    expect(stored).toEqual({
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'system', content: 'Stay\npolite.' },
        { role: 'user', content: 'What is up?' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"at":"sky"}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'the sky' },
        { role: 'assistant', content: 'The sky.' },
        { role: 'user', content: 'And now?' },
      ],
      params: {
        temperature: 0.2,
        top_p: 0.9,
        max_tokens: 50,
        max_completion_tokens: 60,
        stop: ['\n\n', 'END'],
        seed: 7,
        presence_penalty: 0.5,
        frequency_penalty: -0.5,
        response_format: { type: 'json_object' },
        user: 'user-42',
      },
    });
  });

  it.each([
    ['the openai SDK', { model: 'echo', messages: hello }],
    ['LangChain’s ChatOpenAI', { model: 'echo', stream: false, messages: hello }],
    [
      'LangChain with its own defaults set',
      { model: 'echo', temperature: 0.5, stream: false, max_tokens: 20, messages: hello },
    ],
    [
      'Vercel’s openai-compatible provider',
      {
        model: 'echo',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a' },
              { type: 'text', text: 'b' },
            ],
          },
        ],
      },
    ],
    [
      'fields that cannot change the answer',
      {
        model: 'echo',
        messages: hello,
        n: 1,
        logprobs: false,
        top_logprobs: null,
        store: true,
        metadata: { team: 'a' },
        service_tier: 'auto',
        prompt_cache_key: 'k',
        safety_identifier: 'someone',
        modalities: ['text'],
        logit_bias: {},
        stream_options: { include_usage: true },
        tool_choice: 'auto',
        parallel_tool_calls: true,
        tools: null,
      },
    ],
  ])('accepts what %s sends by default', async (_client, body) => {
    const app = await start();
    const { key } = await app.account();
    const answer = await chat(app, key, body);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ object: 'chat.completion', choices: [{ finish_reason: 'stop' }] });
  });

  it('forwards none of the fields that cannot change the answer: tool_choice and parallel_tool_calls without tools, store, metadata', async () => {
    const app = await start();
    const { key } = await app.account();
    const stored = await storedInputOf(app, key, {
      messages: hello,
      tool_choice: 'none',
      parallel_tool_calls: false,
      store: false,
      metadata: { a: 'b' },
      temperature: 1,
    });
    expect(stored).toEqual({
      messages: hello,
      params: { temperature: 1 },
    });
  });

  it.each([
    [{ n: 2 }, 'n', /1 choice/],
    [{ logprobs: true }, 'logprobs', /not supported/],
    [{ top_logprobs: 2 }, 'top_logprobs', /not supported/],
    [{ audio: { voice: 'alloy', format: 'mp3' } }, 'audio', /not supported/],
    [{ modalities: ['text', 'audio'] }, 'modalities', /text/],
    [{ functions: [{ name: 'f' }] }, 'functions', /tools/],
    [{ function_call: 'auto' }, 'function_call', /tool_choice/],
    [{ reasoning_effort: 'low' }, 'reasoning_effort', /not supported/],
    [{ logit_bias: { '50256': -100 } }, 'logit_bias', /not supported/],
    [{ prediction: { type: 'content', content: 'x' } }, 'prediction', /not supported/],
    [{ web_search_options: {} }, 'web_search_options', /not supported/],
    [{ top_k: 40 }, 'top_k', /unknown parameter/],
    [{ temperature: 3 }, 'temperature', /0 to 2/],
    [{ top_p: -1 }, 'top_p', /0 to 1/],
    [{ max_tokens: 0 }, 'max_tokens', /integer/],
    [{ max_completion_tokens: 1.5 }, 'max_completion_tokens', /integer/],
    [{ seed: 'x' }, 'seed', /integer/],
    [{ stop: Array.from({ length: 17 }, (_, i) => `s${i}`) }, 'stop', /at most 16/],
    [{ stop: [1] }, 'stop', /strings/],
    [{ response_format: { type: 'xml' } }, 'response_format.type', /json_schema/],
    [
      { response_format: { type: 'json_schema', json_schema: { name: 'has space' } } },
      'response_format.json_schema.name',
      /letters/,
    ],
    [{ user: 'u'.repeat(257) }, 'user', /256/],
    [{ stream: 'yes' }, 'stream', /true or false/],
    [{ stream: true, stream_options: { include_usage: 'x' } }, 'stream_options.include_usage', /true or false/],
    [{ stream: true, stream_options: { chunk_size: 3 } }, 'stream_options.chunk_size', /unknown/],
    [{ tools: [{ type: 'web_search' }] }, 'tools[0].type', /function tools only/],
    [{ tools: [{ type: 'function', function: { name: 'a b' } }] }, 'tools[0].function.name', /letters/],
    [
      { tools: Array.from({ length: 129 }, (_, i) => ({ type: 'function', function: { name: `f${i}` } })) },
      'tools',
      /at most 128/,
    ],
    [{ tool_choice: 'required' }, 'tool_choice', /needs tools/],
    [
      { tool_choice: { type: 'function', function: { name: 'nope' } } },
      'tool_choice.function.name',
      /one of the tools/,
    ],
    [{ messages: [] }, 'messages', /empty/],
    [{ messages: 'hi' }, 'messages', /list/],
    [{ messages: undefined }, 'messages', /required/],
    [{ messages: [{ role: 'user', content: '   ' }] }, 'messages', /empty/],
    [{ messages: [{ role: 'user', content: '\ud800' }] }, 'messages', /surrogate/],
    [{ messages: [{ role: 'robot', content: 'x' }] }, 'messages[0].role', /one of/],
    [{ messages: [{ role: 'function', name: 'f', content: 'x' }] }, 'messages[0].name', /names/],
    [{ messages: [{ role: 'user', name: 'bob', content: 'x' }] }, 'messages[0].name', /names/],
    [
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'c', name: 'not a function name', content: 'r' },
        ],
      },
      'messages[1].name',
      /function’s name/,
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://x/y.png' } }] }] },
      'messages[0].content[0].type',
      /image_url.*text parts only/,
    ],
    [
      { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'x', format: 'wav' } }] }] },
      'messages[0].content[0].type',
      /input_audio/,
    ],
    [
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', content: 'r' },
        ],
      },
      'messages[1].tool_call_id',
      /string/,
    ],
    [{ messages: [{ role: 'user', content: 'x' }, { role: 'assistant' }] }, 'messages[1].content', /tool_calls/],
    [
      {
        messages: [
          { role: 'user', content: 'x' },
          { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f' } }] },
        ],
      },
      'messages[1].tool_calls[0].function.arguments',
      /string/,
    ],
    [{ model: undefined }, 'model', /required/],
    [{ model: 3 }, 'model', /string/],
  ])('refuses %j with 400 naming %s in param', async (fields, param, message) => {
    const app = await start();
    const { key } = await app.account();
    const error = expectOpenAiError(
      await chat(app, key, { model: 'echo', messages: hello, ...fields }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(error.param).toBe(param);
    expect(error.message).toMatch(message);
  });

  it('refuses tools and JSON schemas on the echo model, naming the field', async () => {
    const app = await start();
    const { key } = await app.account();
    const tools = [{ type: 'function', function: { name: 'weather', parameters: { type: 'object' } } }];
    const withTools = expectOpenAiError(
      await chat(app, key, { model: 'echo', messages: hello, tools }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(withTools).toMatchObject({ param: 'tools', message: expect.stringMatching(/cannot call tools/) });
    const schema = { type: 'json_schema', json_schema: { name: 'person', schema: { type: 'object' }, strict: true } };
    const withSchema = expectOpenAiError(
      await chat(app, key, { model: 'echo', messages: hello, response_format: schema }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(withSchema).toMatchObject({ param: 'response_format', message: expect.stringMatching(/JSON schema/) });
  });

  it('refuses an unknown model with 404 model_not_found naming model, and messages over the size limit naming messages', async () => {
    const app = await start();
    const { key } = await app.account();
    const unknown = expectOpenAiError(
      await chat(app, key, { model: 'gpt-9', messages: hello }),
      404,
      'model_not_found',
      'invalid_request_error',
    );
    expect(unknown).toMatchObject({ param: 'model', message: expect.stringMatching(/echo, slow, doomed/) });
    const long = [
      { role: 'user', content: 'x'.repeat(150) },
      { role: 'user', content: 'y'.repeat(150) },
    ];
    const tooLong = expectOpenAiError(
      await chat(app, key, { model: 'echo', messages: long }),
      400,
      'invalid_request',
      'invalid_request_error',
    );
    expect(tooLong).toMatchObject({ param: 'messages', message: expect.stringMatching(/300 characters/) });
  });

  it('answers a request that failed for good with 500 server_error in OpenAI’s shape, airs’s message, and no retry asked', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await chat(app, key, { model: 'doomed', messages: hello });
    const error = expectOpenAiError(answer, 500, 'server_error', 'server_error');
    const reqId = answer.headers.get('x-request-id') ?? '';
    expect(reqId).toMatch(/^req_/);
    expect(error.message).toBe(`processing of request ${reqId} failed after its retries; submit it again`);
    expect(answer.headers.get('x-should-retry')).toBe('false');
    expect(JSON.stringify(answer.body)).not.toMatch(/timed? ?out|\/work\/|node_modules/);
  });

  it('answers a request cancelled while its caller waits with 404 saying so', async () => {
    const app = await start();
    const { key } = await app.account();
    const waiting = chat(app, key, { model: 'slow', messages: hello });
    const reqId = await firstQueued(app);
    const cancelled = await call(app, 'POST', `/v1/responses/resp_${reqId.slice(4)}/cancel`, { key });
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    const error = expectOpenAiError(await waiting, 404, 'not_found', 'invalid_request_error');
    expect(error.message).toMatch(/was cancelled/);
  });

  it('answers a repeat with the same Idempotency-Key and body with the same completion, creating nothing', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    const body = { model: 'echo', messages: hello };
    const first = await chat(app, key, body, { 'idempotency-key': 'chat-1' });
    const again = await chat(app, key, body, { 'idempotency-key': 'chat-1' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    const other = await chat(app, key, { ...body, temperature: 1 }, { 'idempotency-key': 'chat-1' });
    expectOpenAiError(other, 422, 'idempotency_key_reused', 'invalid_request_error');
    const queued = (await loggedEvents(app)).filter((e) => e.type === 'RequestQueued' && e.accountId === accountId);
    expect(queued).toHaveLength(1);
  });
});

describe('POST /v1/chat/completions with stream: true, in process', () => {
  it('streams a role chunk, the text, the finish reason, the usage chunk when asked, then [DONE]', async () => {
    const app = await start();
    const { key } = await app.account();
    const response = await chatCall(app, {
      key,
      body: { model: 'echo', messages: hello, stream: true, stream_options: { include_usage: true } },
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reqId = response.headers.get('x-request-id') ?? '';
    const frames = framesOf(await response.text());
    expect(frames.at(-1)).toEqual({ kind: 'done' });
    const chunks = dataOf(frames);
    const head = {
      id: `chatcmpl-${reqId.slice(4)}`,
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'echo',
    };
    expect(chunks).toEqual([
      {
        ...head,
        choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null }],
        usage: null,
      },
      {
        ...head,
        choices: [{ index: 0, delta: { content: 'Hello there' }, finish_reason: null, logprobs: null }],
        usage: null,
      },
      { ...head, choices: [{ index: 0, delta: {}, finish_reason: 'stop', logprobs: null }], usage: null },
      { ...head, choices: [], usage: { prompt_tokens: 2, completion_tokens: 2, total_tokens: 4 } },
    ]);
  });

  it('sends no usage field and no usage chunk unless asked', async () => {
    const app = await start();
    const { key } = await app.account();
    const response = await chatCall(app, {
      key,
      body: { model: 'echo', messages: hello, stream: true },
    });
    const chunks = dataOf(framesOf(await response.text()));
    expect(chunks).toHaveLength(3);
    for (const chunk of chunks) expect(chunk).not.toHaveProperty('usage');
  });

  it('ends the stream of a request that fails for good with an error event in OpenAI’s shape, and no [DONE]', async () => {
    const app = await start();
    const { key } = await app.account();
    const response = await chatCall(app, {
      key,
      body: { model: 'doomed', messages: hello, stream: true },
    });
    expect(response.status).toBe(200);
    const frames = framesOf(await response.text());
    expect(frames.at(-1)).toEqual({
      kind: 'data',
      data: {
        error: {
          message: expect.stringMatching(/failed after its retries/),
          type: 'server_error',
          param: null,
          code: 'server_error',
        },
      },
    });
    expect(frames.some((frame) => frame.kind === 'done')).toBe(false);
  });

  it('streams a repeat with the same Idempotency-Key as the same completion, creating nothing', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    const body = { model: 'echo', messages: hello, stream: true };
    const headers = { 'idempotency-key': 'stream-1' };
    const first = await chatCall(app, { key, body, headers });
    const firstChunks = dataOf(framesOf(await first.text()));
    const again = await chatCall(app, { key, body, headers });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('x-request-id')).toBe(first.headers.get('x-request-id'));
    const frames = framesOf(await again.text());
    expect(frames.at(-1)).toEqual({ kind: 'done' });
    expect(dataOf(frames)).toEqual(firstChunks);
    const queued = (await loggedEvents(app)).filter((e) => e.type === 'RequestQueued' && e.accountId === accountId);
    expect(queued).toHaveLength(1);
  });

  it('refuses a bad streaming body before any stream starts, as JSON', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await chat(app, key, { model: 'gpt-9', messages: hello, stream: true });
    expectOpenAiError(answer, 404, 'model_not_found', 'invalid_request_error');
  });
});

describe('Errors, authentication and limits on POST /v1/chat/completions', () => {
  it('answers a missing or unknown key with 401 and a suspended account with 403, in OpenAI’s shape', async () => {
    const app = await start();
    const suspended = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    expectOpenAiError(
      await chat(app, 'sk_unknown', { model: 'echo', messages: hello }),
      401,
      'unauthorized',
      'authentication_error',
    );
    expectOpenAiError(
      await call(app, 'POST', '/v1/chat/completions', { body: { model: 'echo', messages: hello } }),
      401,
      'unauthorized',
      'authentication_error',
    );
    expectOpenAiError(
      await chat(app, suspended.key, { model: 'echo', messages: hello }),
      403,
      'forbidden',
      'permission_error',
    );
  });

  it('spends a submit on every create, a refused one too, and answers 429 once they are spent', async () => {
    const plans = { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 2 } };
    const app = await start({ config: { plans } });
    const { key } = await app.account('free');
    expect(remaining(await chat(app, key, { model: 'echo', messages: hello }))).toBe(1);
    expect(remaining(await chat(app, key, { model: 'nope', messages: hello }))).toBe(0);
    const limited = await chat(app, key, { model: 'echo', messages: hello });
    expectOpenAiError(limited, 429, 'rate_limited', 'rate_limit_error');
    expect(limited.headers.get('retry-after')).toMatch(/^[1-9][0-9]*$/);
  });

  it('answers another method with 405 and Allow: POST, and an unknown path under /v1 with 404 naming the routes airs serves', async () => {
    const app = await start();
    const { key } = await app.account();
    const wrong = await call(app, 'GET', '/v1/chat/completions', { key });
    expectOpenAiError(wrong, 405, 'method_not_allowed', 'invalid_request_error');
    expect(wrong.headers.get('allow')).toBe('POST');
    for (const path of [
      '/v1/chat/completion',
      '/v1/chat',
      '/v1/completions',
      '/v1/embeddings',
      '/v1/responses/a/b/c',
    ]) {
      const unknown = await call(app, 'POST', path, { key, body: {} });
      expect(unknown.status, path).toBe(404);
      expect(JSON.stringify(unknown.body), path).toMatch(
        /airs serves POST \/v1\/ai, GET \/v1\/ai, GET \/v1\/models, GET \/v1\/models\/\{id\}, POST \/v1\/chat\/completions, POST \/v1\/responses/,
      );
    }
  });

  it('answers 503 with Retry-After while the server is stopping', async () => {
    const app = await start();
    const { key } = await app.account();
    app.stopAccepting();
    const answer = await chat(app, key, { model: 'echo', messages: hello });
    expectOpenAiError(answer, 503, 'server_error', 'server_error');
  });

  it('counts its calls under its own route in /metrics', async () => {
    const app = await start();
    const { key } = await app.account();
    await chat(app, key, { model: 'echo', messages: hello });
    const metrics = await (await app.call('GET', '/metrics')).text();
    expect(metrics).toMatch(/airs_http_requests_total\{method="POST",route="\/v1\/chat\/completions",status="200"\} 1/);
  });
});
