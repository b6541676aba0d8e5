import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startToolUpstream } from '../http/support/toolUpstream.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * The official `openai` SDK (the version airs depends on) against a real `airs serve` on a socket, with
 * `baseURL = <airs>/v1`: streaming creates, the `responses.stream()` helper, retrieve streams, `responses.parse` with
 * a zod schema, a tool round trip, and the errors it raises. The `gpt` model is the `openai` provider against the
 * small upstream of toolUpstream.ts (it answers tools with a call, a JSON schema with JSON, and `pieces: a|b|c` in
 * pieces); `echo`, `slow` and `doomed` are those of servedAirs.ts.
 */

type Upstream = Awaited<ReturnType<typeof startToolUpstream>>;
const serve = servedAirs();
let airs: ServedAirs;
let upstream: Upstream;
let client: OpenAI;
beforeAll(async () => {
  upstream = await startToolUpstream();
  airs = await serve('airs-sdk-responses', [
    { id: 'gpt', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'up', timeoutMs: 30_000, maxRetries: 0 },
  ]);
  client = new OpenAI({ baseURL: `${airs.url}/v1`, apiKey: airs.key, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await airs?.stop();
  await upstream?.close();
});

/** Checks again and again (every 10 ms, for 20 s at most: a loaded machine) until `check` gives a value. */
const eventually = async <A>(check: () => A | undefined): Promise<A> => {
  for (let tries = 0; tries < 2_000; tries++) {
    const value = check();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('condition not met within 20 s');
};

describe('the official openai SDK against a real airs server: Responses', { timeout: 60_000 }, () => {
  it('iterates responses.create({stream: true}) as OpenAI’s typed events', async () => {
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
    const Weather = z.object({ city: z.string(), temperature: z.number() });
    const parsed = await client.responses.parse({
      model: 'gpt',
      input: 'Weather in Paris?',
      text: { format: zodTextFormat(Weather, 'weather') },
    });
    expect(parsed.output_parsed).toEqual({ city: 'Paris', temperature: 21 });
    const sent = upstream.received.filter((body) => body.messages.at(-1)?.content === 'Weather in Paris?');
    expect(sent).toHaveLength(1);
    expect(sent[0]?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { name: 'weather', strict: true },
    });
  });

  it('makes a tool round trip: a function_call out, its output back in, an answer that uses it', async () => {
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
    const refused = await client.responses
      .create({ model: 'echo', input: 'x', stream: true, tools: [{ type: 'web_search_preview' }] })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('tools[0].type');
  });
});
