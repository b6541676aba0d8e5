import { type AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * LangChain's `ChatOpenAI` (`@langchain/openai` with `@langchain/core`, the versions pinned in package.json) against
 * a real `airs serve`, configured as an application would: the model, the key, and `configuration.baseURL`. Both of
 * its APIs: chat completions (its default) and the Responses API (`useResponsesApi: true`).
 */

const words = (text: string) => text.split(' ').length;

const serve = servedAirs();
let airs: ServedAirs;
beforeAll(async () => {
  airs = await serve('airs-langchain');
}, 60_000);
afterAll(() => airs?.stop());

const apis = [
  ['chat completions', false],
  ['the Responses API', true],
] as const;

const chatModel = (model: string, useResponsesApi: boolean) =>
  new ChatOpenAI({ model, apiKey: airs.key, configuration: { baseURL: `${airs.url}/v1` }, useResponsesApi });

const weather = tool(async ({ city }: { city: string }) => `sunny in ${city}`, {
  name: 'get_weather',
  description: 'The weather in a city',
  schema: z.object({ city: z.string() }),
});

describe('LangChain’s ChatOpenAI against a real airs server', { timeout: 60_000 }, () => {
  it.each(apis)('invoke over %s: the answer, its usage_metadata, and the messages sent upstream', async (name, api) => {
    const prompt = `Hello from invoke over ${name}`;
    const answer = await chatModel('llm', api).invoke([new SystemMessage('Be brief.'), new HumanMessage(prompt)]);
    expect(answer.text).toBe(`upstream says: ${prompt}`);
    const inputTokens = words('Be brief.') + words(prompt);
    const outputTokens = words(answer.text);
    expect(answer.usage_metadata).toMatchObject({
      input_tokens: inputTokens,
      output_tokens: outputTokens,
      total_tokens: inputTokens + outputTokens,
    });
    expect(airs.sentFor(prompt)).toMatchObject([
      {
        model: 'tiny-chat',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: prompt },
        ],
      },
    ]);
  });

  it.each(apis)('invoke over %s on the echo model answers the last user message', async (_, api) => {
    const answer = await chatModel('echo', api).invoke('What is a queue?');
    expect(answer.text).toBe('What is a queue?');
  });

  it.each(apis)('.stream() over %s: the upstream’s pieces as they come, then the usage', async (name, api) => {
    const prompt = `stream this over ${name}`;
    const chunks = [];
    for await (const chunk of await chatModel('llm', api).stream(prompt)) chunks.push(chunk);
    const pieces = chunks.map((chunk) => chunk.text).filter((text) => text !== '');
    expect(pieces.join('')).toBe(`upstream says: ${prompt}`);
    // The fake upstream writes one word at a time, and airs passes each on while the request runs.
    expect(pieces.length).toBeGreaterThan(1);
    const withUsage = chunks.filter((chunk) => chunk.usage_metadata !== undefined).at(-1);
    expect(withUsage?.usage_metadata).toMatchObject({ output_tokens: words(pieces.join('')) });
    expect(airs.sentFor(prompt)).toMatchObject([{ stream: true }]);
  });

  it.each(apis)(
    'bindTools over %s: the tool call comes back, and its result goes up in the next turn',
    async (name, api) => {
      const model = chatModel('llm', api).bindTools([weather]);
      const prompt = `call get_weather {"city":"Paris ${name}"}`;
      const history = [new HumanMessage(prompt)];
      const first = await model.invoke(history);
      expect(first.tool_calls).toMatchObject([{ name: 'get_weather', args: { city: `Paris ${name}` } }]);
      const call = first.tool_calls?.[0];
      if (call === undefined) throw new Error('no tool call');
      const result = await weather.invoke(call);
      expect(result).toBeInstanceOf(ToolMessage);
      const second = await model.invoke([...history, first as AIMessage, result]);
      expect(second.text).toBe(`upstream says: tool said: sunny in Paris ${name}`);
      const sent = airs.upstream.received.filter((each) =>
        each.body.messages.some((message) => message.content === prompt),
      );
      expect(sent.map((each) => each.body.messages.map((message) => message.role))).toEqual([
        ['user'],
        ['user', 'assistant', 'tool'],
      ]);
      expect(sent[0]?.body.tools).toMatchObject([
        { type: 'function', function: { name: 'get_weather', parameters: { required: ['city'] } } },
      ]);
      // LangChain names the tool message after its function; the call it answers says so already upstream.
      expect(sent[1]?.body.messages[2]).toEqual({
        role: 'tool',
        tool_call_id: call.id,
        content: `sunny in Paris ${name}`,
      });
      expect(sent[1]?.body.messages[1]?.tool_calls).toMatchObject([
        { id: call.id, function: { name: 'get_weather', arguments: JSON.stringify({ city: `Paris ${name}` }) } },
      ]);
    },
  );
});
