import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { postOverSocket } from '../support/socketCall.js';
import { dataOf, type Frame, framesOf } from '../support/sse.js';
import { eventually, listen, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';
import { checkedAnswer, checkedText } from './support/checkedAnswer.js';

/**
 * Chat completions of an `openai`-provider model against a fake upstream on 127.0.0.1 (contract 13): deltas reach a
 * streaming caller while the upstream still writes; the full text is stored and committed once; parameters and tools
 * reach the upstream as given, on every attempt; tool calls come back as the assistant message's `tool_calls` and a
 * conversation carries `tool` messages back; a caller that goes away leaves a cancelled request and an aborted
 * upstream call.
 */

type Upstream = Awaited<ReturnType<typeof startFakeOpenAi>>;
let upstream: Upstream;
beforeAll(async () => {
  upstream = await startFakeOpenAi();
});
afterAll(() => upstream.close());

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
afterEach(async () => {
  await server?.close();
  await app?.stop();
  server = undefined;
  app = undefined;
});

const start = async (maxAttempts = 1) => {
  const model: ModelConfig = {
    id: 'llm',
    provider: 'openai',
    baseUrl: upstream.baseUrl,
    upstreamModel: 'tiny-chat',
    timeoutMs: 30_000,
    maxRetries: 0,
  };
  app = await startTestApp({
    config: { models: [model], processing: { concurrency: 4, maxAttempts } },
    clock: systemClock,
  });
  server = await listen(app);
  const { key } = await app.account('scale');
  return { app, url: server.url, key };
};

/** A call of the chat route, its answer checked against the OpenAPI document first. */
const chatCall = async (testApp: TestApp, init: Parameters<TestApp['call']>[2]) =>
  checkedAnswer('POST', '/v1/chat/completions', await testApp.call('POST', '/v1/chat/completions', init));

const typesOf = async (testApp: TestApp, reqId: string) =>
  (await loggedEvents(testApp)).filter((e) => 'reqId' in e && e.reqId === reqId).map((e) => e.type);

/** What the upstream received for calls whose last message is `prompt`. */
const sentFor = (prompt: string) =>
  upstream.received.filter((call) => call.body.messages.at(-1)?.content === prompt).map((call) => call.body);

/** The text a chunk frame carries, if it is one (not the usage chunk, an error or [DONE]). */
const deltaText = (frame: Frame | undefined) =>
  frame?.kind === 'data'
    ? (frame.data as { choices?: { delta: { content?: string } }[] }).choices?.[0]?.delta.content
    : undefined;

const weather = {
  type: 'function',
  function: {
    name: 'weather',
    description: 'The weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    strict: true,
  },
};

describe('Streaming an openai-provider model', () => {
  it('passes deltas to the caller while the upstream still writes, and stores the full text once', async () => {
    const { app, url, key } = await start();
    const prompt = 'gated tell me a story';
    const finishedBefore = upstream.streamsFinished();
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'llm',
      messages: [{ role: 'user', content: prompt }],
      stream: true,
      stream_options: { include_usage: true },
    }).answered;
    const reqId = String(call.headers['x-request-id']);
    expect(await call.frames.next()).toMatchObject({
      kind: 'data',
      data: { choices: [{ delta: { role: 'assistant' } }] },
    });
    // The upstream wrote its first piece and now waits on the gate: the caller has that piece already.
    expect(deltaText(await call.frames.next())).toBe('upstream');
    expect(upstream.streamsFinished()).toBe(finishedBefore);
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted']);
    upstream.openGate();
    const rest = await call.frames.rest();
    const text = `upstream${rest
      .map(deltaText)
      .filter((piece) => piece !== undefined)
      .join('')}`;
    expect(text).toBe(`upstream says: ${prompt}`);
    expect(rest.at(-1)).toEqual({ kind: 'done' });
    const usage = dataOf(rest).at(-1);
    // The upstream's own figures: 5 words in, 7 out.
    expect(usage).toMatchObject({ choices: [], usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 } });
    // The upstream was asked to stream, with its usage.
    expect(sentFor(prompt)).toEqual([
      expect.objectContaining({ stream: true, stream_options: { include_usage: true } }),
    ]);
    // Committed once, with the whole text.
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCompleted']);
    const polled = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(await polled.json()).toMatchObject({
      status: 'completed',
      response: text,
      usage: { input_tokens: 5, output_tokens: 7, total_tokens: 12 },
    });
  });

  it('ends the stream with an error event when a streamed attempt breaks, and the request goes on to complete', async () => {
    const { app, url, key } = await start(2);
    const prompt = 'break-stream-once please';
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'llm',
      messages: [{ role: 'user', content: prompt }],
      stream: true,
    }).answered;
    const reqId = String(call.headers['x-request-id']);
    const frames = await call.frames.rest();
    expect(frames.map(deltaText).filter((piece) => piece !== undefined)).toEqual(['', 'upstream']);
    expect(frames.at(-1)).toEqual({
      kind: 'data',
      data: {
        error: {
          message: expect.stringMatching(new RegExp(`part of this answer was streamed; request ${reqId} is retried`)),
          type: 'server_error',
          param: null,
          code: 'server_error',
        },
      },
    });
    // The request was not cancelled by the end of its stream: its retry completes it.
    await eventually(async () => ((await typesOf(app, reqId)).includes('RequestCompleted') ? true : undefined), 10_000);
    expect(await typesOf(app, reqId)).not.toContain('RequestCancelled');
    const polled = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(await polled.json()).toMatchObject({ status: 'completed', response: `upstream says: ${prompt}` });
  });
});

describe('Parameters and tools of an openai-provider model', () => {
  it('reach the upstream as given, and the same again when a first attempt fails', async () => {
    const { app, key } = await start(2);
    const params = {
      temperature: 0.3,
      top_p: 0.8,
      max_tokens: 40,
      max_completion_tokens: 50,
      stop: ['END'],
      seed: 11,
      presence_penalty: 0.1,
      frequency_penalty: 0.2,
      response_format: {
        type: 'json_schema',
        json_schema: {
          name: 'answer',
          schema: { type: 'object', properties: { a: { type: 'string' } } },
          strict: true,
        },
      },
      tools: [weather],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      user: 'u-1',
    };
    const messages = [
      { role: 'developer', content: 'Be brief.' },
      { role: 'user', content: 'rate-limit-once' },
    ];
    const answer = await chatCall(app, { key, body: { model: 'llm', messages, ...params } });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({
      choices: [{ message: { content: 'upstream says: rate-limit-once' } }],
    });
    const sent = sentFor('rate-limit-once');
    expect(sent).toHaveLength(2);
    const expected = {
      model: 'tiny-chat',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'rate-limit-once' },
      ],
      ...params,
    };
    expect(sent[0]).toEqual(expected);
    expect(sent[1]).toEqual(expected);
  });

  it('bring tool calls back as the message’s tool_calls, and a conversation carries the tool’s result back', async () => {
    const { app, key } = await start();
    const ask = [{ role: 'user', content: 'call weather {"city":"Paris"}' }];
    const first = await chatCall(app, {
      key,
      body: { model: 'llm', messages: ask, tools: [weather] },
    });
    expect(first.status).toBe(200);
    const completion = (await first.json()) as {
      choices: { message: { content: string | null; tool_calls: { id: string }[] }; finish_reason: string }[];
      usage: unknown;
    };
    const toolCall = { id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } };
    expect(completion.choices[0]).toEqual({
      index: 0,
      message: { role: 'assistant', content: null, refusal: null, tool_calls: [toolCall] },
      finish_reason: 'tool_calls',
      logprobs: null,
    });
    expect(completion.usage).toEqual({ prompt_tokens: 3, completion_tokens: 0, total_tokens: 3 });

    const conversation = [
      ...ask,
      { role: 'assistant', content: null, tool_calls: [toolCall] },
      { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
    ];
    const second = await chatCall(app, {
      key,
      body: { model: 'llm', messages: conversation, tools: [weather] },
    });
    expect(await second.json()).toMatchObject({
      choices: [{ message: { content: 'upstream says: tool said: sunny' }, finish_reason: 'stop' }],
    });
    expect(sentFor('sunny')[0]?.messages).toEqual(conversation);
  });

  it('stream tool calls as one chunk with whole arguments, then the finish reason tool_calls', async () => {
    const { url, key } = await start();
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'llm',
      messages: [{ role: 'user', content: 'call weather {"city":"Oslo"}' }],
      tools: [weather],
      stream: true,
    }).answered;
    const frames = framesOf(await checkedText('POST', '/v1/chat/completions', call));
    expect(frames.at(-1)).toEqual({ kind: 'done' });
    expect(dataOf(frames).map((chunk) => (chunk as { choices: unknown[] }).choices[0])).toEqual([
      { index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null, logprobs: null },
      {
        index: 0,
        delta: {
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'weather', arguments: '{"city":"Oslo"}' } },
          ],
        },
        finish_reason: null,
        logprobs: null,
      },
      { index: 0, delta: {}, finish_reason: 'tool_calls', logprobs: null },
    ]);
  });
});

describe('A caller of an openai-provider model that goes away', () => {
  it.each([
    ['waiting on POST /v1/chat/completions', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hang' }] }],
    [
      'streaming POST /v1/chat/completions',
      '/v1/chat/completions',
      { messages: [{ role: 'user', content: 'hang' }], stream: true },
    ],
    ['waiting on POST /v1/responses', '/v1/responses', { input: 'hang' }],
  ])('%s: leaves a cancelled request and an aborted upstream call', async (_name, path, body) => {
    const { app, url, key } = await start();
    const abandonedBefore = upstream.abandoned();
    const callsBefore = upstream.calls('hang');
    const call = postOverSocket(url, path, key, { model: 'llm', ...body });
    await eventually(() => (upstream.calls('hang') === callsBefore + 1 ? true : undefined));
    const reqId = (await loggedEvents(app)).find((e) => e.type === 'RequestQueued')?.reqId ?? '';
    call.drop();
    await eventually(() => (upstream.abandoned() === abandonedBefore + 1 ? true : undefined));
    await app.processor.idle();
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
  });
});
