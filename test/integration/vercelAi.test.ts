import { createOpenAI } from '@ai-sdk/openai';
import { APICallError, generateObject, generateText, streamText } from 'ai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * The Vercel AI SDK (`ai` with `@ai-sdk/openai`, the versions pinned in package.json) against a real `airs serve`,
 * configured as an application would: `createOpenAI({baseURL: <airs>/v1, apiKey})`, nothing else. Both of its
 * OpenAI models: `provider.chat` (chat completions) and `provider.responses` (the Responses API, its default).
 */

const words = (text: string) => text.split(' ').length;

const serve = servedAirs();
let airs: ServedAirs;
let provider: ReturnType<typeof createOpenAI>;
beforeAll(async () => {
  airs = await serve('airs-vercel');
  provider = createOpenAI({ baseURL: `${airs.url}/v1`, apiKey: airs.key });
}, 60_000);
afterAll(() => airs?.stop());

describe('The Vercel AI SDK against a real airs server', { timeout: 60_000 }, () => {
  it.each([
    ['provider.chat', () => provider.chat('llm')],
    ['provider.responses', () => provider.responses('llm')],
  ])(
    'generateText with %s: the answer, its finish reason and usage, and the settings sent upstream',
    async (name, model) => {
      const prompt = `Hello from generateText with ${name}`;
      const result = await generateText({
        model: model(),
        system: 'Be brief.',
        prompt,
        temperature: 0.2,
        topP: 0.9,
        maxOutputTokens: 50,
        seed: name === 'provider.chat' ? 7 : undefined,
      });
      expect(result.text).toBe(`upstream says: ${prompt}`);
      expect(result.finishReason).toBe('stop');
      // The fake upstream counts words: "Be brief." and the prompt in, its answer out.
      const inputTokens = words('Be brief.') + words(prompt);
      const outputTokens = words(result.text);
      expect(result.usage).toMatchObject({ inputTokens, outputTokens, totalTokens: inputTokens + outputTokens });
      const [sent, ...more] = airs.sentFor(prompt);
      expect(more).toEqual([]);
      expect(sent).toMatchObject({
        model: 'tiny-chat',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: prompt },
        ],
        temperature: 0.2,
        top_p: 0.9,
      });
      // chat completions' max_tokens as given; the Responses API's max_output_tokens as max_completion_tokens.
      if (name === 'provider.chat') expect(sent).toMatchObject({ max_tokens: 50, seed: 7 });
      else expect(sent).toMatchObject({ max_completion_tokens: 50 });
    },
  );

  it.each([
    ['provider.chat', () => provider.chat('llm')],
    ['provider.responses', () => provider.responses('llm')],
  ])(
    'streamText with %s: the upstream’s pieces as they come, then the finish reason and usage',
    async (name, model) => {
      const prompt = `stream this through ${name}`;
      const result = streamText({ model: model(), prompt });
      const pieces: string[] = [];
      for await (const piece of result.textStream) pieces.push(piece);
      expect(pieces.join('')).toBe(`upstream says: ${prompt}`);
      // The fake upstream writes one word at a time, and airs passes each on while the request runs.
      expect(pieces.length).toBeGreaterThan(1);
      expect(await result.finishReason).toBe('stop');
      expect((await result.usage).outputTokens).toBe(words(pieces.join('')));
      expect(airs.sentFor(prompt)).toMatchObject([{ stream: true, stream_options: { include_usage: true } }]);
    },
  );

  it.each([
    ['provider.chat', () => provider.chat('llm')],
    ['provider.responses', () => provider.responses('llm')],
  ])('generateObject with %s: a JSON schema sent upstream, the object parsed', async (name, model) => {
    const prompt = `verbatim {"city":"Paris","temperature":21,"via":"${name}"}`;
    const { object } = await generateObject({
      model: model(),
      schema: z.object({ city: z.string(), temperature: z.number(), via: z.string() }),
      prompt,
    });
    expect(object).toEqual({ city: 'Paris', temperature: 21, via: name });
    expect(airs.sentFor(prompt)[0]?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: { schema: { type: 'object', required: ['city', 'temperature', 'via'] } },
    });
  });

  it.each([
    ['provider.chat', () => provider.chat('llm')],
    ['provider.responses', () => provider.responses('llm')],
  ])(
    'generateText with tools on %s: the call comes back, and its result goes up in the next step',
    async (name, model) => {
      const prompt = `call get_weather {"city":"Paris via ${name}"}`;
      const weather = {
        description: 'The weather in a city',
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }: { city: string }) => `sunny in ${city}`,
      };
      const result = await generateText({
        model: model(),
        prompt,
        tools: { get_weather: weather },
        // One more step after the tool's result, as an agent loop makes it.
        stopWhen: ({ steps }) => steps.length >= 2,
      });
      expect(result.steps[0]?.toolCalls).toMatchObject([
        { toolName: 'get_weather', input: { city: `Paris via ${name}` } },
      ]);
      expect(result.text).toBe(`upstream says: tool said: sunny in Paris via ${name}`);
      const sent = airs.upstream.received.filter((call) =>
        call.body.messages.some((message) => message.content === prompt),
      );
      expect(sent.map((call) => call.body.messages.map((message) => message.role))).toEqual([
        ['user'],
        ['user', 'assistant', 'tool'],
      ]);
      expect(sent[0]?.body.tools).toMatchObject([
        { type: 'function', function: { name: 'get_weather', parameters: { required: ['city'] } } },
      ]);
      expect(sent[1]?.body.messages[2]).toEqual({
        role: 'tool',
        tool_call_id: sent[1]?.body.messages[1]?.tool_calls?.[0]?.id,
        content: `sunny in Paris via ${name}`,
      });
    },
  );

  it('a request airs tries again sends the upstream the same conversation, settings and tools', async () => {
    // The fake upstream answers this prompt's first call 429; the model has no retries of its own, so the request's
    // first attempt fails and airs makes a second from what it stored.
    const prompt = 'rate-limit-once';
    const result = await generateText({
      model: provider.responses('llm'),
      system: 'Be brief.',
      prompt,
      temperature: 0.4,
      maxOutputTokens: 30,
      tools: { get_weather: { description: 'The weather', inputSchema: z.object({ city: z.string() }) } },
    });
    expect(result.text).toBe('upstream says: rate-limit-once');
    const sent = airs.sentFor(prompt);
    expect(sent).toHaveLength(2);
    expect(sent[1]).toEqual(sent[0]);
    expect(sent[0]).toMatchObject({
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: prompt },
      ],
      temperature: 0.4,
      max_completion_tokens: 30,
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: { required: ['city'] } } }],
    });
  });

  it('raises APICallError with airs’s message when a request fails for good, through either model', async () => {
    const failed = await generateText({ model: provider.responses('doomed'), prompt: 'x' }).catch(
      (error: unknown) => error,
    );
    expect(APICallError.isInstance(failed)).toBe(true);
    expect((failed as APICallError).message).toMatch(/failed after its retries; submit it again/);

    const chatFailed = await generateText({ model: provider.chat('doomed'), prompt: 'x', maxRetries: 0 }).catch(
      (error: unknown) => error,
    );
    expect(APICallError.isInstance(chatFailed)).toBe(true);
    expect((chatFailed as APICallError).message).toMatch(/failed after its retries; submit it again/);
    expect((chatFailed as APICallError).statusCode).toBe(500);
  });

  it('raises APICallError naming what airs refuses', async () => {
    const refused = await generateText({
      model: provider.chat('echo'),
      prompt: 'x',
      tools: { t: { inputSchema: z.object({}) } },
    }).catch((error: unknown) => error);
    expect(APICallError.isInstance(refused)).toBe(true);
    expect((refused as APICallError).statusCode).toBe(400);
    expect((refused as APICallError).message).toMatch(/cannot call tools/);
  });
});
