import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, listen, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';
import { startToolUpstream } from './support/toolUpstream.js';

/**
 * The official `openai` SDK (the version airs depends on) against airs on a real socket, with `baseURL = <airs>/v1`:
 * streaming creates, the `responses.stream()` helper, retrieve streams, `responses.parse` with a zod schema, a tool
 * round trip, and the errors it raises.
 */

type Upstream = Awaited<ReturnType<typeof startToolUpstream>>;
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const start = async (): Promise<{ app: TestApp; client: OpenAI; upstream: Upstream }> => {
  const upstream = await startToolUpstream();
  cleanups.push(upstream.close);
  const config: TestConfig = {
    models: [
      {
        id: 'gpt',
        provider: 'openai',
        baseUrl: upstream.baseUrl,
        upstreamModel: 'up',
        timeoutMs: 30_000,
        maxRetries: 0,
      } as ModelConfig,
      { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
      { id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 },
      { id: 'doomed', provider: 'echo', delayMs: 60_000, timeoutMs: 1 },
    ],
    processing: { concurrency: 4, maxAttempts: 1 },
  };
  const app = await startTestApp({ config, clock: systemClock });
  cleanups.push(() => app.stop());
  const server = await listen(app);
  cleanups.push(async () => server.close());
  const { key } = await app.account('enterprise');
  return { app, upstream, client: new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 }) };
};

describe('the official openai SDK against airs', () => {
  it('iterates responses.create({stream: true}) as OpenAI’s typed events', async () => {
    const { client } = await start();
    const stream = await client.responses.create({ model: 'echo', input: 'Hello SDK', stream: true });
    const types: string[] = [];
    let text = '';
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.completed')
        expect(event.response.output).toMatchObject([{ type: 'message', content: [{ text: 'Hello SDK' }] }]);
    }
    expect(text).toBe('Hello SDK');
    expect(types.at(0)).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
  });

  it('builds the final Response with responses.stream(), live pieces included, and its usage', async () => {
    const { client } = await start();
    const deltas: string[] = [];
    const stream = client.responses
      .stream({ model: 'gpt', input: 'pieces: a|b|c' })
      .on('response.output_text.delta', (event) => deltas.push(event.delta));
    const final = await stream.finalResponse();
    expect(deltas).toEqual(['a', 'b', 'c']);
    expect(final.output_text).toBe('abc');
    expect(final.status).toBe('completed');
    expect(final.usage).toMatchObject({ input_tokens: 7, output_tokens: 3, total_tokens: 10 });
  });

  it('streams a background response with responses.retrieve(id, {stream: true}) and resumes with starting_after', async () => {
    const { client } = await start();
    const created = await client.responses.create({ model: 'echo', input: 'later', background: true });
    expect(created.status).toBe('queued');
    const events: { type: string; sequence_number: number }[] = [];
    for await (const event of await client.responses.retrieve(created.id, { stream: true })) events.push(event);
    expect(events.at(-1)).toMatchObject({ type: 'response.completed' });
    const resumed: number[] = [];
    for await (const event of await client.responses.retrieve(created.id, { stream: true, starting_after: 4 }))
      resumed.push(event.sequence_number);
    expect(resumed).toEqual(events.slice(5).map((event) => event.sequence_number));
    // The helper replays the whole stream and leaves out what it had, to build the same final Response.
    const helper = client.responses.stream({ response_id: created.id, starting_after: 4 });
    expect((await helper.finalResponse()).output_text).toBe('later');
  });

  it('parses structured output with responses.parse and a zod schema', async () => {
    const { client, upstream } = await start();
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const parsed = await client.responses.parse({
      model: 'gpt',
      input: 'Weather in Paris?',
      text: { format: zodTextFormat(Weather, 'weather') },
    });
    expect(parsed.output_parsed).toEqual({ city: 'Paris', temperature: 21 });
    expect(upstream.received[0]?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'weather', strict: true },
    });
  });

  it('makes a tool round trip: a function_call out, its output back in, an answer that uses it', async () => {
    const { client } = await start();
    const tools: OpenAI.Responses.Tool[] = [
      {
        type: 'function',
        name: 'get_weather',
        parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
        strict: true,
      },
    ];
    const first = await client.responses.create({ model: 'gpt', input: 'Paris', tools });
    const call = first.output.find((item) => item.type === 'function_call');
    expect(call).toMatchObject({ name: 'get_weather', arguments: '{"city":"Paris"}' });
    if (call?.type !== 'function_call') throw new Error('no function call');
    const second = await client.responses.create({
      model: 'gpt',
      tools,
      input: [
        { role: 'user', content: 'Paris' },
        // As OpenAI's guide does it: the first Response's output sent back as input.
        ...(first.output as OpenAI.Responses.ResponseInputItem[]),
        { type: 'function_call_output', call_id: call.call_id, output: 'sunny' },
      ],
    });
    expect(second.output_text).toBe('the tool said: sunny');
  });

  it('returns a failed Response with airs’s error, and raises a cancelled stream as an APIError with airs’s message', async () => {
    const { client } = await start();
    const failed = await client.responses.create({ model: 'doomed', input: 'x' });
    expect(failed.status).toBe('failed');
    expect(failed.error?.message).toMatch(/failed after its retries; submit it again/);

    const created = await client.responses.create({ model: 'slow', input: 'x', background: true });
    const stream = await client.responses.retrieve(created.id, { stream: true });
    const seen: string[] = [];
    const reading = (async () => {
      for await (const event of stream) seen.push(event.type);
    })();
    await eventually(() => (seen.length >= 2 ? true : undefined));
    await client.responses.cancel(created.id);
    const error = await reading.then(
      () => undefined,
      (raised: unknown) => raised,
    );
    expect(error).toBeInstanceOf(OpenAI.APIError);
    expect((error as Error).message).toBe(`request ${created.id} was cancelled; it will not be processed`);
  });

  it('raises BadRequestError naming the param for what airs refuses', async () => {
    const { client } = await start();
    const refused = await client.responses
      .create({ model: 'echo', input: 'x', stream: true, tools: [{ type: 'web_search_preview' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools[0].type');
  });
});
