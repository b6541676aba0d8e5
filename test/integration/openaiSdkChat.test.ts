import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * The official `openai` SDK's chat completions (the version airs depends on) against a real `airs serve`, with
 * `baseURL = <airs>/v1` and the SDK's defaults otherwise (its two retries included): waiting, streamed with
 * `stream: true` and with the `chat.completions.stream()` helper, a tool round trip, `chat.completions.parse` with a
 * zod schema, and the errors it raises. `llm` is the `openai` provider against the fake upstream (fakeOpenAi.ts).
 */

const words = (text: string) => text.split(' ').length;

const serve = servedAirs();
let airs: ServedAirs;
let client: OpenAI;
beforeAll(async () => {
  airs = await serve('airs-sdk-chat');
  client = new OpenAI({ baseURL: `${airs.url}/v1`, apiKey: airs.key });
}, 60_000);
afterAll(() => airs?.stop());

describe('the official openai SDK against a real airs server: chat completions', { timeout: 60_000 }, () => {
  it('chat.completions.create waits for the completion: its text, finish reason, usage, and an id that polls on /v1/ai', async () => {
    const prompt = 'Hello from the SDK';
    const { data: completion, response } = await client.chat.completions
      .create({
        model: 'llm',
        messages: [
          { role: 'developer', content: 'Be brief.' },
          { role: 'user', content: prompt },
        ],
        temperature: 0.5,
        max_completion_tokens: 64,
        stop: ['END'],
      })
      .withResponse();
    expect(completion).toMatchObject({
      object: 'chat.completion',
      model: 'llm',
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: `upstream says: ${prompt}` },
          finish_reason: 'stop',
          logprobs: null,
        },
      ],
    });
    const inputTokens = words('Be brief.') + words(prompt);
    const outputTokens = words(`upstream says: ${prompt}`);
    expect(completion.usage).toEqual({
      prompt_tokens: inputTokens,
      completion_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    });
    // The completion is a request like any other: chatcmpl-X is req_X, named in x-request-id.
    const reqId = response.headers.get('x-request-id');
    expect(completion.id).toBe(`chatcmpl-${reqId?.slice('req_'.length)}`);
    const polled = await fetch(`${airs.url}/v1/ai?req_id=${reqId}`, {
      headers: { authorization: `Bearer ${airs.key}` },
    });
    expect(await polled.json()).toMatchObject({ status: 'completed', response: `upstream says: ${prompt}` });
    expect(airs.sentFor(prompt)).toEqual([
      {
        model: 'tiny-chat',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: prompt },
        ],
        temperature: 0.5,
        max_completion_tokens: 64,
        stop: ['END'],
      },
    ]);
  });

  it('chat.completions.create({stream: true}) yields the upstream’s pieces as they come, then the usage chunk', async () => {
    const prompt = 'stream me some words';
    const stream = await client.chat.completions.create({
      model: 'llm',
      messages: [{ role: 'user', content: prompt }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const pieces = chunks.flatMap((chunk) => chunk.choices[0]?.delta.content ?? []).filter((piece) => piece !== '');
    expect(pieces.join('')).toBe(`upstream says: ${prompt}`);
    // The fake upstream writes one word at a time, and airs passes each on while the request runs.
    expect(pieces.length).toBe(words(`upstream says: ${prompt}`));
    expect(chunks.at(0)?.choices[0]?.delta.role).toBe('assistant');
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe('stop');
    expect(chunks.at(-1)).toMatchObject({ choices: [], usage: { completion_tokens: pieces.length } });
    expect(airs.sentFor(prompt)).toMatchObject([{ stream: true, stream_options: { include_usage: true } }]);
  });

  it('chat.completions.stream() builds the final completion from the chunks, and streams echo’s text whole', async () => {
    const stream = client.chat.completions.stream({
      model: 'echo',
      messages: [{ role: 'user', content: 'echo, streamed' }],
    });
    const deltas: string[] = [];
    stream.on('content.delta', ({ delta }) => deltas.push(delta));
    const final = await stream.finalChatCompletion();
    expect(deltas).toEqual(['echo, streamed']);
    expect(final.choices[0]?.message.content).toBe('echo, streamed');
    expect(final.choices[0]?.finish_reason).toBe('stop');
  });

  it('makes a tool round trip: tool_calls out, the tool’s result back in, an answer that uses it', async () => {
    const tools: OpenAI.Chat.ChatCompletionTool[] = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'The weather in a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        },
      },
    ];
    const prompt = 'call get_weather {"city":"Oslo"}';
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [{ role: 'user', content: prompt }];
    const first = await client.chat.completions.create({ model: 'llm', messages, tools, tool_choice: 'auto' });
    const message = first.choices[0]?.message;
    expect(first.choices[0]?.finish_reason).toBe('tool_calls');
    expect(message?.content).toBeNull();
    expect(message?.tool_calls).toMatchObject([
      { type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
    ]);
    const call = message?.tool_calls?.[0];
    if (message === undefined || call === undefined) throw new Error('no tool call');
    const second = await client.chat.completions.create({
      model: 'llm',
      tools,
      messages: [...messages, message, { role: 'tool', tool_call_id: call.id, content: 'cold' }],
    });
    expect(second.choices[0]?.message.content).toBe('upstream says: tool said: cold');
    const sent = airs.upstream.received.filter((each) => each.body.messages[0]?.content === prompt);
    expect(sent.map((each) => each.body.tools)).toEqual([tools, tools]);
    expect(sent[0]?.body.tool_choice).toBe('auto');
    expect(sent[1]?.body.messages.slice(1)).toEqual([
      { role: 'assistant', content: null, tool_calls: [call] },
      { role: 'tool', tool_call_id: call.id, content: 'cold' },
    ]);
  });

  it('streams tool calls as the SDK’s helper accumulates them', async () => {
    const stream = client.chat.completions.stream({
      model: 'llm',
      messages: [{ role: 'user', content: 'call lookup {"q":"airs"}' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } }],
    });
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    expect(final.choices[0]?.message.tool_calls).toMatchObject([
      { type: 'function', function: { name: 'lookup', arguments: '{"q":"airs"}' } },
    ]);
  });

  it('chat.completions.parse reads the answer with a zod schema, sent upstream as a JSON schema', async () => {
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const prompt = 'verbatim {"city":"Lima","temperature":19}';
    const parsed = await client.chat.completions.parse({
      model: 'llm',
      messages: [{ role: 'user', content: prompt }],
      response_format: zodResponseFormat(Weather, 'weather'),
    });
    expect(parsed.choices[0]?.message.parsed).toEqual({ city: 'Lima', temperature: 19 });
    expect(airs.sentFor(prompt)[0]?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'weather', strict: true, schema: { required: ['city', 'temperature'] } },
    });
  });

  it('raises InternalServerError with airs’s message for a request that failed for good, and does not retry it', async () => {
    const failed = await client.chat.completions
      .create({ model: 'llm', messages: [{ role: 'user', content: 'always-500' }] })
      .catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(OpenAI.InternalServerError);
    expect((failed as Error).message).toMatch(/failed after its retries; submit it again/);
    // One request, tried twice by airs (processing.maxAttempts); the SDK's own retries were not spent on it.
    expect(airs.upstream.calls('always-500')).toBe(2);
  });

  it('raises BadRequestError naming the param, and an APIError with airs’s message for a stream that is cancelled', async () => {
    const refused = await client.chat.completions
      .create({ model: 'echo', messages: [{ role: 'user', content: 'x' }], n: 2 })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('n');

    const { data: stream, response } = await client.chat.completions
      .create({ model: 'slow', messages: [{ role: 'user', content: 'x' }], stream: true })
      .withResponse();
    const reqId = response.headers.get('x-request-id') ?? '';
    const reading = (async () => {
      for await (const _ of stream);
    })();
    await client.responses.cancel(reqId);
    const error = await reading.then(
      () => undefined,
      (raised: unknown) => raised,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toBe(`request ${reqId} was cancelled; it will not be processed`);
  });
});
