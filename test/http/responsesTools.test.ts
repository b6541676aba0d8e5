import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { sseEventsOf, sseReader } from '../support/sseFrames.js';
import { type CallInit, eventually, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';
import { startToolUpstream } from './support/toolUpstream.js';

/**
 * Tools, structured output and generation settings on `/v1/responses` (contract 13): read into chat completions'
 * parameters and messages, sent to an `openai`-provider upstream and kept with the request; the model's tool calls as
 * `function_call` output items, its usage in `usage`, and its live text as stream deltas.
 */

type Upstream = Awaited<ReturnType<typeof startToolUpstream>>;
const upstreams: Upstream[] = [];
const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
  for (const upstream of upstreams.splice(0)) await upstream.close();
});

const start = async () => {
  const upstream = await startToolUpstream();
  upstreams.push(upstream);
  const gpt: ModelConfig = {
    id: 'gpt',
    provider: 'openai',
    baseUrl: upstream.baseUrl,
    upstreamModel: 'up-model',
    timeoutMs: 30_000,
    maxRetries: 0,
  } as ModelConfig;
  const config: TestConfig = {
    models: [gpt, { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }],
    processing: { concurrency: 4, maxAttempts: 1 },
  };
  const app = await startTestApp({ config, clock: systemClock });
  apps.push(app);
  const { key } = await app.account('enterprise');
  const post = async (body: unknown, init: CallInit = {}) => {
    const answer = await app.call('POST', '/v1/responses', { ...init, key, body });
    return { status: answer.status, answer, json: async () => (await answer.json()) as Record<string, unknown> };
  };
  return { app, key, upstream, post };
};

const weatherTool = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: true,
};

describe('settings and tools sent upstream', () => {
  it('sends the settings as chat completions parameters, tools and tool_choice in chat’s shape, and echoes them in the Response', async () => {
    const { upstream, post } = await start();
    const answer = await post({
      model: 'gpt',
      input: 'Paris',
      tools: [weatherTool],
      tool_choice: { type: 'function', name: 'get_weather' },
      parallel_tool_calls: false,
      temperature: 0.2,
      top_p: 0.9,
      max_output_tokens: 50,
      user: 'user-1',
      store: true,
      metadata: { any: 'thing' },
      include: ['reasoning.encrypted_content'],
      truncation: 'disabled',
    });
    expect(answer.status).toBe(200);
    const response = await answer.json();
    const sent = upstream.received[0];
    expect(sent).toMatchObject({
      model: 'up-model',
      messages: [{ role: 'user', content: 'Paris' }],
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 50,
      user: 'user-1',
      parallel_tool_calls: false,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            description: 'The weather in a city',
            parameters: weatherTool.parameters,
            strict: true,
          },
        },
      ],
    });
    // Fields that do not change the answer are not sent on.
    expect(sent).not.toHaveProperty('store');
    expect(sent).not.toHaveProperty('metadata');
    expect(sent).not.toHaveProperty('max_tokens');
    expect(response).toMatchObject({
      status: 'completed',
      temperature: 0.2,
      top_p: 0.9,
      max_output_tokens: 50,
      user: 'user-1',
      parallel_tool_calls: false,
      tool_choice: { type: 'function', name: 'get_weather' },
      tools: [{ type: 'function', name: 'get_weather', parameters: null, strict: true }],
      text: { format: { type: 'text' } },
      usage: {
        input_tokens: 7,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: 3,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: 10,
      },
    });
    // The model only called a tool: no message, one function_call item.
    const id = String(response.id);
    expect(response.output).toEqual([
      {
        type: 'function_call',
        id: `fc_${id.slice('resp_'.length)}_0`,
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '{"city":"Paris"}',
        status: 'completed',
      },
    ]);
  });

  it('sends a conversation’s function_call and function_call_output items as an assistant message with tool_calls and a tool message', async () => {
    const { upstream, post } = await start();
    const answer = await post({
      model: 'gpt',
      instructions: 'be brief',
      input: [
        { role: 'user', content: 'Weather in Paris?' },
        {
          type: 'message',
          role: 'assistant',
          content: [{ type: 'output_text', text: 'Let me look.', annotations: [] }],
        },
        {
          type: 'function_call',
          id: 'fc_x',
          call_id: 'call_a',
          name: 'get_weather',
          arguments: '{"city":"Paris"}',
          status: 'completed',
        },
        { type: 'function_call', call_id: 'call_b', name: 'get_weather', arguments: '{"city":"Lyon"}' },
        { type: 'function_call_output', call_id: 'call_a', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_b', output: [{ type: 'input_text', text: 'rain' }] },
      ],
    });
    expect(await answer.json()).toMatchObject({
      status: 'completed',
      output: [{ type: 'message', content: [{ type: 'output_text', text: 'the tool said: rain' }] }],
    });
    expect(upstream.received[0]?.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'Weather in Paris?' },
      {
        role: 'assistant',
        content: 'Let me look.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lyon"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'sunny' },
      { role: 'tool', tool_call_id: 'call_b', content: 'rain' },
    ]);
  });

  it('sends a json_schema text format as response_format, and echoes its name without the schema', async () => {
    const { upstream, post } = await start();
    const schema = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] };
    const answer = await post({
      model: 'gpt',
      input: 'where?',
      text: { format: { type: 'json_schema', name: 'place', schema, strict: true } },
    });
    const response = await answer.json();
    expect(upstream.received[0]?.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'place', schema, strict: true },
    });
    expect(response).toMatchObject({
      text: { format: { type: 'json_schema', name: 'place', strict: true } },
      output: [{ content: [{ text: '{"city":"Paris","temperature":21}' }] }],
    });
    // A json_object format is sent as it is; a text one is what every model does unasked, and is not sent.
    await post({ model: 'gpt', input: 'x', text: { format: { type: 'json_object' } } });
    expect(upstream.received[1]?.response_format).toEqual({ type: 'json_object' });
    await post({ model: 'gpt', input: 'x', text: { format: { type: 'text' } } });
    expect(upstream.received[2]).not.toHaveProperty('response_format');
  });

  it('says an answer cut by the token limit stopped short, in incomplete_details', async () => {
    const { post } = await start();
    expect(await (await post({ model: 'gpt', input: 'cut', max_output_tokens: 3 })).json()).toMatchObject({
      status: 'completed',
      incomplete_details: { reason: 'max_output_tokens' },
      output: [{ content: [{ text: 'cut sho' }] }],
    });
  });
});

describe('references to earlier output items', () => {
  it('reads an item_reference to an earlier Response’s message or function call as that item, and refuses another account’s', async () => {
    const { app, upstream, post } = await start();
    const said = await (await post({ model: 'gpt', input: 'hello' })).json();
    const called = await (await post({ model: 'gpt', input: 'Paris', tools: [weatherTool] })).json();
    const messageId = (said.output as { id: string }[])[0]?.id;
    const callItem = (called.output as { id: string; call_id: string }[])[0];
    const answer = await post({
      model: 'gpt',
      tools: [weatherTool],
      input: [
        { role: 'user', content: 'hello' },
        { type: 'item_reference', id: messageId },
        { role: 'user', content: 'Paris' },
        { type: 'item_reference', id: callItem?.id },
        { type: 'function_call_output', call_id: callItem?.call_id, output: 'sunny' },
      ],
    });
    expect(answer.status).toBe(200);
    expect(upstream.received.at(-1)?.messages).toEqual([
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'upstream says: hello' },
      { role: 'user', content: 'Paris' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_2', content: 'sunny' },
    ]);
    // Another account's items are not there for this one.
    const { key: strangerKey } = await app.account('enterprise');
    const stranger = await app.call('POST', '/v1/responses', {
      key: strangerKey,
      body: { model: 'gpt', input: [{ type: 'item_reference', id: messageId }] },
    });
    expect(stranger.status).toBe(400);
    expect(((await stranger.json()) as { error: { param: string } }).error.param).toBe('input[0].id');
  });
});

describe('streams of an openai-provider model', () => {
  it('passes the upstream’s pieces on as deltas while the request runs', async () => {
    const { post } = await start();
    const answer = await post({ model: 'gpt', input: 'pieces: one |two |three', stream: true });
    const events = sseEventsOf(await answer.answer.text());
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual([
      'one ',
      'two ',
      'three',
    ]);
    expect(events.find((e) => e.type === 'response.output_text.done')).toMatchObject({ text: 'one two three' });
    expect(events.at(-1)).toMatchObject({
      type: 'response.completed',
      response: { output: [{ content: [{ text: 'one two three' }] }], usage: { input_tokens: 7, output_tokens: 3 } },
    });
  });

  it('streams the first piece before the upstream has written the rest', async () => {
    const { app, key, upstream, post } = await start();
    const answer = await post({ model: 'gpt', input: 'hold', stream: true });
    const reader = sseReader(answer.answer.body as ReadableStream<Uint8Array>);
    const created = await reader.next();
    const id = String(((created?.kind === 'event' ? created.data.response : {}) as { id?: string }).id);
    const first = await reader.until(
      (frame) => frame.kind === 'event' && frame.data.type === 'response.output_text.delta',
    );
    expect(first).toMatchObject({ data: { delta: 'held ' } });
    // The text came while the request runs: the upstream holds the rest back.
    const now = (await (await app.call('GET', `/v1/responses/${id}`, { key })).json()) as { status: string };
    expect(now.status).toBe('in_progress');
    upstream.release();
    const rest = await reader.until(
      (frame) => frame.kind === 'event' && frame.data.type === 'response.output_text.delta',
    );
    expect(rest).toMatchObject({ data: { delta: 'released' } });
    expect(
      await reader.until((frame) => frame.kind === 'event' && frame.data.type === 'response.completed'),
    ).toMatchObject({ data: { response: { output: [{ content: [{ text: 'held released' }] }] } } });
  });

  it('ends with an error event naming the cancellation when the request is cancelled after part of its text was streamed', async () => {
    const { app, key, post } = await start();
    const answer = await post({ model: 'gpt', input: 'hold', stream: true, background: true });
    const reader = sseReader(answer.answer.body as ReadableStream<Uint8Array>);
    const created = await reader.next();
    const id = String(((created?.kind === 'event' ? created.data.response : {}) as { id?: string }).id);
    await reader.until((frame) => frame.kind === 'event' && frame.data.type === 'response.output_text.delta');
    expect((await app.call('POST', `/v1/responses/${id}/cancel`, { key })).status).toBe(200);
    expect(await reader.next()).toMatchObject({ data: { type: 'error', code: 'cancelled' } });
    expect(await reader.next()).toBeUndefined();
  });

  it('ends with a stream_interrupted error when an attempt whose text was streamed fails, and the request goes on', async () => {
    const { app, key, post } = await start();
    const answer = await post({ model: 'gpt', input: 'break', stream: true });
    const events = sseEventsOf(await answer.answer.text());
    const id = String((events[0]?.response as { id?: string } | undefined)?.id);
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual(['partial ']);
    expect(events.at(-1)).toMatchObject({
      type: 'error',
      code: 'stream_interrupted',
      error: { type: 'server_error', message: expect.stringMatching(`retrieve ${id} for its answer`) },
    });
    // The request is not over for the stream's end: it fails (its only attempt broke) as any request does.
    await eventually(async () => {
      const now = (await (await app.call('GET', `/v1/responses/${id}`, { key })).json()) as { status: string };
      return now.status === 'failed' ? true : undefined;
    });
  });

  it('gives a stream that arrives during an attempt the whole text when it completes', async () => {
    const { app, key, upstream, post } = await start();
    const created = await (await post({ model: 'gpt', input: 'hold', background: true })).json();
    const id = String(created.id);
    await eventually(() => (upstream.received.length === 1 ? true : undefined));
    const streamed = await app.call('GET', `/v1/responses/${id}?stream=true`, { key });
    upstream.release();
    const events = sseEventsOf(await streamed.text());
    expect(events.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta)).toEqual([
      'held released',
    ]);
    // Nobody listened when the attempt began: it asked the upstream for a whole answer.
    expect(upstream.received[0]?.stream).toBeUndefined();
  });

  it('writes a model’s tool calls as function_call items with their argument events, after the message if any', async () => {
    const { post } = await start();
    const answer = await post({ model: 'gpt', input: 'Paris', tools: [weatherTool], stream: true });
    const events = sseEventsOf(await answer.answer.text());
    const id = String((events[0]?.response as { id?: string } | undefined)?.id);
    const itemId = `fc_${id.slice('resp_'.length)}_0`;
    expect(events.map((e) => e.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.output_item.added',
      'response.function_call_arguments.delta',
      'response.function_call_arguments.done',
      'response.output_item.done',
      'response.completed',
    ]);
    expect(events[2]).toMatchObject({
      output_index: 0,
      item: {
        type: 'function_call',
        id: itemId,
        call_id: 'call_1',
        name: 'get_weather',
        arguments: '',
        status: 'in_progress',
      },
    });
    expect(events[3]).toMatchObject({ item_id: itemId, output_index: 0, delta: '{"city":"Paris"}' });
    expect(events[4]).toMatchObject({ item_id: itemId, name: 'get_weather', arguments: '{"city":"Paris"}' });
    expect(events[5]).toMatchObject({ item: { arguments: '{"city":"Paris"}', status: 'completed' } });
    expect(events[6]).toMatchObject({ response: { output: [{ type: 'function_call', call_id: 'call_1' }] } });
  });
});

describe('what /v1/responses refuses', () => {
  const tool = (extra: Record<string, unknown>) => ({ type: 'function', name: 'f', ...extra });
  it.each([
    [{ tools: [{ type: 'web_search_preview' }] }, 'tools[0].type', /function tools only/],
    [{ tools: 'f' }, 'tools', /list of function tools/],
    [{ tools: [tool({ name: '' })] }, 'tools[0].name', /non-empty/],
    [{ tools: [tool({ name: 'has space' })] }, 'tools[0].name', /64 characters/],
    [{ tools: [tool({ name: 'x'.repeat(65) })] }, 'tools[0].name', /64 characters/],
    [{ tools: [tool({}), tool({})] }, 'tools[1].name', /twice/],
    [{ tools: [tool({ parameters: 'x' })] }, 'tools[0].parameters', /JSON Schema/],
    [{ tools: [tool({ strict: 'yes' })] }, 'tools[0].strict', /true or false/],
    [{ tools: [tool({ description: 3 })] }, 'tools[0].description', /string/],
    [{ tool_choice: 'required' }, 'tool_choice', /needs tools/],
    [{ tool_choice: { type: 'allowed_tools', mode: 'auto', tools: [] } }, 'tool_choice', /not supported/],
    [{ tools: [tool({})], tool_choice: { type: 'function', name: 'g' } }, 'tool_choice.name', /one of the functions/],
    [{ parallel_tool_calls: 'no' }, 'parallel_tool_calls', /true or false/],
    [{ text: 'json' }, 'text', /object/],
    [{ text: { format: { type: 'xml' } } }, 'text.format.type', /json_schema/],
    [{ text: { format: { type: 'json_schema', name: 'a' } } }, 'text.format.schema', /JSON Schema/],
    [{ text: { format: { type: 'json_schema', schema: {} } } }, 'text.format.name', /non-empty/],
    [{ text: { verbosity: 'low' } }, 'text.verbosity', /not supported/],
    [{ temperature: 3 }, 'temperature', /0 to 2/],
    [{ temperature: '1' }, 'temperature', /0 to 2/],
    [{ top_p: -0.1 }, 'top_p', /0 to 1/],
    [{ max_output_tokens: 0 }, 'max_output_tokens', /at least 1/],
    [{ max_output_tokens: 1.5 }, 'max_output_tokens', /whole number/],
    [{ user: 5 }, 'user', /string/],
    [{ top_logprobs: 5 }, 'top_logprobs', /log probabilities/],
    [{ include: ['message.output_text.logprobs'] }, 'include', /log probabilities/],
    [{ max_tool_calls: 2 }, 'max_tool_calls', /not supported/],
    [{ stream: 'true' }, 'stream', /true or false/],
    [{ input: [{ type: 'function_call', call_id: 'c', name: 'f' }] }, 'input[0].arguments', /JSON text/],
    [{ input: [{ type: 'function_call', name: 'f', arguments: '{}' }] }, 'input[0].call_id', /non-empty/],
    [{ input: [{ type: 'function_call', call_id: 'c', arguments: '{}' }] }, 'input[0].name', /non-empty/],
    [
      {
        input: [
          { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' },
          { type: 'function_call_output', call_id: 'c', output: [{ type: 'input_image', image_url: 'x' }] },
        ],
      },
      'input[1].output[0].type',
      /input_image/,
    ],
    [{ input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] }, 'input[0].type', /reasoning/],
    [{ input: [{ type: 'item_reference', id: 'msg_1' }] }, 'input[0].id', /no output item "msg_1"/],
    [{ input: [{ type: 'item_reference' }] }, 'input[0].id', /id of an output item/],
    [{ input: [{ type: 'computer_call_output', call_id: 'c' }] }, 'input[0].type', /computer_call_output/],
  ])('refuses %j with 400 naming %s', async (fields, param, message) => {
    const { post } = await start();
    const answer = await post({ model: 'gpt', input: 'x', ...fields });
    expect(answer.status).toBe(400);
    const { error } = (await answer.json()) as { error: { param: string; message: string; code: string } };
    expect(error).toMatchObject({ param, code: 'invalid_request' });
    expect(error.message).toMatch(message);
  });

  it('accepts null for every setting, as the SDKs send a setting left unset', async () => {
    const { post } = await start();
    const nulls = Object.fromEntries(
      [
        'tools',
        'tool_choice',
        'parallel_tool_calls',
        'text',
        'temperature',
        'top_p',
        'max_output_tokens',
        'user',
        'top_logprobs',
        'max_tool_calls',
        'include',
        'stream',
        'background',
        'instructions',
        'previous_response_id',
      ].map((field) => [field, null]),
    );
    const answer = await post({ model: 'gpt', input: 'x', ...nulls });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ status: 'completed' });
  });
});
