import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { echoProvider } from '../../src/adapters/models/echo.js';
import { openAiProvider } from '../../src/adapters/models/openai.js';
import type { Model } from '../../src/app/Models.js';
import { createModelCaller } from '../../src/app/processing/modelCall.js';
import type { FunctionTool, Generation } from '../../src/ports/ModelProvider.js';
import { UpstreamFailed } from '../../src/ports/ModelProvider.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';

/**
 * `models[].maxAnswerBytes`: one call's answer (its text, and its tool calls' ids, names and arguments, in UTF-8) is
 * taken up to the bound and fails one byte beyond it, as the upstream's failure; whole or streamed, however the
 * upstream escapes its JSON; and an answer that does not end is cut off once past the bound, not at the timeout.
 */

type Fake = Awaited<ReturnType<typeof startFakeOpenAi>>;

/**
 * Text of exactly `bytes` UTF-8 bytes, dense in what JSON escapes and in characters beyond ASCII, in words of about
 * 200 bytes (the fake streams a word an event).
 */
const textOf = (bytes: number): string => {
  const unit = `${'say "€" 😀\n\u0001\\'.repeat(10)} `;
  let text = unit.repeat(Math.floor(bytes / Buffer.byteLength(unit)));
  text += 'a'.repeat(bytes - Buffer.byteLength(text));
  return text;
};

const lookup: FunctionTool = { type: 'function', function: { name: 'lookup', parameters: { type: 'object' } } };

describe('An upstream’s answer bounded by maxAnswerBytes (the openai provider against a local server)', {
  timeout: 30_000,
}, () => {
  let plain: Fake;
  let escaping: Fake;
  beforeAll(async () => {
    plain = await startFakeOpenAi();
    // Every character beyond ASCII as \uXXXX, as Python servers write JSON: the body is several times the answer.
    escaping = await startFakeOpenAi({ asciiJson: true });
  });
  afterAll(async () => {
    await plain.close();
    await escaping.close();
  });

  const providerOf = (upstream: Fake, maxAnswerBytes: number) =>
    openAiProvider({
      baseUrl: upstream.baseUrl,
      apiKey: undefined,
      upstreamModel: 'm',
      timeoutMs: 60_000,
      maxRetries: 2,
      maxAnswerBytes,
    });

  /** One call, streamed (its pieces gathered) or whole; the answer, or the failure it ended with. */
  const call = async (
    upstream: Fake,
    maxAnswerBytes: number,
    prompt: string,
    streamed: boolean,
    tools?: readonly FunctionTool[],
  ) => {
    const pieces: string[] = [];
    try {
      const generation = await providerOf(upstream, maxAnswerBytes).generate({
        prompt,
        params: tools === undefined ? undefined : { tools },
        signal: new AbortController().signal,
        onDelta: streamed ? (piece) => void pieces.push(piece) : undefined,
      });
      return { generation, pieces };
    } catch (error) {
      return { error, pieces };
    }
  };

  const tooLargeAt = (upstream: Fake, maxAnswerBytes: number) =>
    new UpstreamFailed(`upstream ${upstream.baseUrl} answered more than maxAnswerBytes (${maxAnswerBytes} bytes)`, {
      kind: 'answerTooLarge',
      maxAnswerBytes,
    });

  describe.each([
    ['whole', false],
    ['streamed', true],
  ])('%s', (_mode, streamed) => {
    it.each([
      ['writes JSON as JSON.stringify does', () => plain],
      ['escapes every character beyond ASCII', () => escaping],
    ])(
      'takes an answer of exactly maxAnswerBytes and fails one a byte longer, when the upstream %s',
      async (_how, upstreamOf) => {
        const upstream = upstreamOf();
        // Above the 64 KiB of envelope a body may add: escaped, the body is far larger than bound and envelope.
        const bound = 100_000;
        const atBound = await call(upstream, bound, `verbatim ${textOf(bound)}`, streamed);
        expect(atBound.error).toBeUndefined();
        expect(atBound.generation?.text).toBe(textOf(bound));
        if (streamed) expect(atBound.pieces.join('')).toBe(textOf(bound));

        const over = await call(upstream, bound, `verbatim ${textOf(bound + 1)}`, streamed);
        expect(over.error).toEqual(tooLargeAt(upstream, bound));
        // Nothing beyond the bound is passed on to whoever streams the request.
        expect(Buffer.byteLength(over.pieces.join(''))).toBeLessThanOrEqual(bound);
      },
    );

    it('counts a tool call’s id, name and arguments: a call of exactly maxAnswerBytes is taken, one a byte longer fails', async () => {
      const args = JSON.stringify({ city: 'Zürich', note: 'a "quoted" €', streamed });
      const prompt = `call lookup ${args}`;
      // The fake's first answer to a prompt calls it with id `call_1` (the next, `call_2`).
      const bytes = Buffer.byteLength('call_1') + Buffer.byteLength('lookup') + Buffer.byteLength(args);
      const atBound = await call(plain, bytes, prompt, streamed, [lookup]);
      expect(atBound.generation?.toolCalls).toEqual([
        { id: 'call_1', type: 'function', function: { name: 'lookup', arguments: args } },
      ]);
      const over = await call(plain, bytes - 1, prompt, streamed, [lookup]);
      expect(over.error).toEqual(tooLargeAt(plain, bytes - 1));
    });

    it('cuts off an answer that never ends as soon as it passes the bound, in one upstream call, and closes its connection', async () => {
      const prompt = `huge ${1024 ** 4 + (streamed ? 1 : 0)}`;
      const abandoned = plain.abandoned();
      const { error } = await call(plain, 1024 * 1024, prompt, streamed);
      // Neither the timeout (a minute) nor the SDK's retries (two): the bound, at once.
      expect(error).toEqual(tooLargeAt(plain, 1024 * 1024));
      expect(plain.calls(prompt)).toBe(1);
      await expect.poll(() => plain.abandoned()).toBe(abandoned + 1);
    });
  });
});

describe('The model call’s own check of maxAnswerBytes (any provider)', () => {
  const modelOf = (maxAnswerBytes: number, generate?: () => Promise<Generation>): Model => ({
    config: { id: 'bounded', provider: 'echo', delayMs: 0, timeoutMs: 1_000, maxAnswerBytes },
    provider: generate === undefined ? echoProvider({ delayMs: 0 }) : { generate },
  });

  it('takes an answer of exactly the bound and fails one beyond it as the upstream’s failure, retried and telling the caller the bound', async () => {
    const caller = createModelCaller(undefined);
    expect(await caller.call('req_1', modelOf(12), { prompt: '€€€€' })).toMatchObject({
      ok: true,
      generation: { text: '€€€€' },
    });
    // Five characters, fifteen bytes: counted in UTF-8.
    expect(await caller.call('req_2', modelOf(12), { prompt: '€€€€€' })).toEqual({
      ok: false,
      reason: 'the model answered more than maxAnswerBytes (12 bytes)',
      said: "the model's answer was larger than its maxAnswerBytes (12 bytes)",
      permanent: false,
    });
  });

  it('counts the tool calls a provider answers with, their ids, names and arguments', async () => {
    const caller = createModelCaller(undefined);
    const answer: Generation = {
      text: 'ok',
      toolCalls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      finishReason: 'tool_calls',
    };
    const generate = async () => answer;
    expect(await caller.call('req_1', modelOf(7, generate), { prompt: 'x' })).toEqual({ ok: true, generation: answer });
    expect(await caller.call('req_2', modelOf(6, generate), { prompt: 'x' })).toMatchObject({
      ok: false,
      said: "the model's answer was larger than its maxAnswerBytes (6 bytes)",
    });
  });
});
