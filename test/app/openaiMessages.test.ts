import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAiProvider } from '../../src/adapters/models/openai.js';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Conversations reach an `openai`-provider upstream as chat messages (contract 11): what `POST /v1/responses` was
 * given, in order, with `developer` sent as `system`; a plain prompt still goes as one user message.
 */
describe('The openai provider with conversations from POST /v1/responses', () => {
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  let app: TestApp | undefined;
  /** Delays for the upstream's next calls (none: it answers at once), so a call can be kept busy and cancelled. */
  const pendingDelay: number[] = [];
  beforeAll(async () => {
    upstream = await startFakeOpenAi({ delayMs: () => pendingDelay.shift() ?? 0 });
  });
  afterAll(() => upstream.close());
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });
  const start = async () => {
    const model: ModelConfig = {
      id: 'llm',
      provider: 'openai',
      baseUrl: upstream.baseUrl,
      upstreamModel: 'tiny-chat',
      timeoutMs: 30_000,
      maxRetries: 0,
    };
    app = await startTestApp({
      config: { models: [model], processing: { concurrency: 4, maxAttempts: 1 } },
      clock: systemClock,
    });
    return { app, ...(await app.account('scale')) };
  };

  /** Creates a Response and waits for it; returns it with the chat call the upstream received for it. */
  const createAndWait = async (testApp: TestApp, key: string, body: Record<string, unknown>) => {
    const before = upstream.received.length;
    const answer = await testApp.call('POST', '/v1/responses', { key, body: { model: 'llm', ...body } });
    expect(answer.status).toBe(200);
    const response = (await answer.json()) as { status: string; output: { content: { text: string }[] }[] };
    expect(upstream.received.length).toBe(before + 1);
    return { response, sent: upstream.received[before]?.body };
  };

  it('sends a list of messages upstream as chat messages in order, instructions first as system and developer as system', async () => {
    const { app, key } = await start();
    const { response, sent } = await createAndWait(app, key, {
      instructions: 'You are terse.',
      input: [
        { role: 'developer', content: 'Answer in one word.' },
        { role: 'user', content: 'What colour is the sky?' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Blue.' }] },
        { role: 'system', content: 'Stay polite.' },
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'And grass?' },
            { type: 'input_text', text: 'Be sure.' },
          ],
        },
      ],
    });
    expect(sent).toEqual({
      model: 'tiny-chat',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'system', content: 'Answer in one word.' },
        { role: 'user', content: 'What colour is the sky?' },
        { role: 'assistant', content: 'Blue.' },
        { role: 'system', content: 'Stay polite.' },
        { role: 'user', content: 'And grass?\nBe sure.' },
      ],
    });
    expect(response.status).toBe('completed');
    expect(response.output[0]?.content[0]?.text).toBe('upstream says: And grass?\nBe sure.');
  });

  it('sends a string input with instructions as a system and a user message', async () => {
    const { app, key } = await start();
    const { sent } = await createAndWait(app, key, { instructions: 'Reply in French.', input: 'Good morning' });
    expect(sent?.messages).toEqual([
      { role: 'system', content: 'Reply in French.' },
      { role: 'user', content: 'Good morning' },
    ]);
  });

  it('sends a string input without instructions, and a /v1/ai prompt, as one user message', async () => {
    const { app, key } = await start();
    const { sent } = await createAndWait(app, key, { input: 'Just this' });
    expect(sent?.messages).toEqual([{ role: 'user', content: 'Just this' }]);
    const before = upstream.received.length;
    await app.call('POST', '/v1/ai', { key, body: { model: 'llm', prompt: 'From the spec face' } });
    await eventually(() => (upstream.received.length > before ? true : undefined));
    expect(upstream.received[before]?.body.messages).toEqual([{ role: 'user', content: 'From the spec face' }]);
  });

  it('aborts the upstream call when the Response is cancelled, and the request never completes', async () => {
    const { app, key } = await start();
    pendingDelay.push(20_000);
    const before = upstream.received.length;
    const abandonedBefore = upstream.abandoned();
    const created = await app.call('POST', '/v1/responses', {
      key,
      body: { model: 'llm', input: [{ role: 'user', content: 'Take your time' }], background: true },
    });
    const { id } = (await created.json()) as { id: string };
    await eventually(() => (upstream.received.length > before ? true : undefined));
    const cancelled = await app.call('POST', `/v1/responses/${id}/cancel`, { key });
    expect(((await cancelled.json()) as { status: string }).status).toBe('cancelled');
    // The upstream sees its caller hang up: the call was aborted, not left to run for 20 s.
    await eventually(() => (upstream.abandoned() > abandonedBefore ? true : undefined), 10_000);
    await app.processor.idle();
    const after = await app.call('GET', `/v1/responses/${id}`, { key });
    expect(await after.json()).toMatchObject({ status: 'cancelled', output: [] });
  });
});

describe('The openai provider called directly', () => {
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  beforeAll(async () => {
    upstream = await startFakeOpenAi();
  });
  afterAll(() => upstream.close());
  const provider = () =>
    openAiProvider({
      baseUrl: upstream.baseUrl,
      apiKey: undefined,
      upstreamModel: 'm',
      timeoutMs: 5_000,
      maxRetries: 0,
      maxAnswerBytes: 1024 * 1024,
    });

  it('sends the messages when it has them, and the prompt as one user message when it has none', async () => {
    const signal = new AbortController().signal;
    const messages = [
      { role: 'developer', content: 'Be exact.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
    ] as const;
    expect((await provider().generate({ prompt: 'three', messages, signal })).text).toBe('upstream says: three');
    expect(upstream.received.at(-1)?.body.messages).toEqual([
      { role: 'system', content: 'Be exact.' },
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'two' },
      { role: 'user', content: 'three' },
    ]);
    expect((await provider().generate({ prompt: 'alone', signal })).text).toBe('upstream says: alone');
    expect(upstream.received.at(-1)?.body.messages).toEqual([{ role: 'user', content: 'alone' }]);
  });
});
