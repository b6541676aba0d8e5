import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { createAccountWithKey, fileSandboxes, type ServerProcess, sleep, startServer } from '../support/processes.js';

const newBox = fileSandboxes();

/** The official SDK as an application would make it: only the base URL and the key are airs'. */
const sdk = (server: ServerProcess, apiKey: string) =>
  new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 });

/** Retrieves until the Response is no longer queued or in progress. */
const settle = async (client: OpenAI, id: string) => {
  for (let i = 0; i < 200; i++) {
    const response = await client.responses.retrieve(id);
    if (response.status !== 'queued' && response.status !== 'in_progress') return response;
    await sleep(50);
  }
  throw new Error(`response ${id} did not settle`);
};

describe('the official openai SDK against a real airs server, changing only baseURL and the key', () => {
  it('lists the models, creates in the background and retrieves until completed, and waits when not in the background', {
    timeout: 60_000,
  }, async () => {
    const box = newBox('airs-sdk');
    const server = await startServer(box);
    const { key } = await createAccountWithKey(box, 'sdk@example.com', 'scale');
    const client = sdk(server, key);

    const models = await client.models.list();
    expect(models.data.map((model) => model.id)).toEqual(['echo', 'echo-slow']);
    expect(models.data[0]).toMatchObject({ object: 'model', owned_by: 'airs' });
    expect((await client.models.retrieve('echo')).id).toBe('echo');

    const queued = await client.responses.create({ model: 'echo', input: 'Hello from the SDK', background: true });
    expect(queued).toMatchObject({ object: 'response', model: 'echo' });
    expect(queued.id).toMatch(/^resp_/);
    const done = await settle(client, queued.id);
    expect(done.status).toBe('completed');
    expect(done.output_text).toBe('Hello from the SDK');

    const waited = await client.responses.create({
      model: 'echo',
      instructions: 'Be brief.',
      input: [
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
        { role: 'user', content: [{ type: 'input_text', text: 'second question' }] },
      ],
    });
    expect(waited.status).toBe('completed');
    expect(waited.output_text).toBe('second question');
    await server.stop();
  });

  it('cancels a request that is queued, and the cancelled request is never completed', {
    timeout: 60_000,
  }, async () => {
    const box = newBox('airs-sdk-cancel');
    // echo-slow answering after 1 s rather than the default 5 s: the wait below outlasts it all the same.
    box.writeConfig({ models: [{ id: 'echo-slow', provider: 'echo', delayMs: 1_000 }] });
    const server = await startServer(box);
    const { key } = await createAccountWithKey(box, 'sdk-cancel@example.com', 'scale');
    const client = sdk(server, key);
    const slow = await client.responses.create({ model: 'echo-slow', input: 'never mind', background: true });
    const cancelled = await client.responses.cancel(slow.id);
    expect(cancelled.status).toBe('cancelled');
    // echo-slow would have answered after 1 s: it stays cancelled with no output.
    await sleep(1_500);
    const after = await client.responses.retrieve(slow.id);
    expect(after.status).toBe('cancelled');
    expect(after.output).toEqual([]);
    await server.stop();
  });

  it("raises the SDK's own error classes for 400, 401, 404 and 429", { timeout: 60_000 }, async () => {
    const box = newBox('airs-sdk-errors');
    const server = await startServer(box);
    const { key } = await createAccountWithKey(box, 'sdk-errors@example.com', 'free');
    const client = sdk(server, key);

    const badRequest = await client.responses.create({ model: 'echo', input: '' }).catch((error: unknown) => error);
    expect(badRequest).toBeInstanceOf(OpenAI.BadRequestError);
    // A model that does not exist is OpenAI's own 404 model_not_found (contract 21).
    const noModel = await client.responses.create({ model: 'gpt-9', input: 'x' }).catch((error: unknown) => error);
    expect(noModel).toBeInstanceOf(OpenAI.NotFoundError);
    expect(noModel).toMatchObject({ code: 'model_not_found', param: 'model' });
    expect((noModel as InstanceType<typeof OpenAI.NotFoundError>).message).toMatch(/unknown model/);

    const unauthorized = await sdk(server, 'sk_not-a-key')
      .models.list()
      .catch((error: unknown) => error);
    expect(unauthorized).toBeInstanceOf(OpenAI.AuthenticationError);

    const notFound = await client.responses.retrieve('resp_nothing_here').catch((error: unknown) => error);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);

    // The free plan's 60 submits a minute, spent: the next create is refused with Retry-After.
    let limited: unknown;
    for (let i = 0; i < 70 && limited === undefined; i++)
      await client.responses.create({ model: 'echo', input: `n${i}`, background: true }).catch((error: unknown) => {
        limited = error;
      });
    expect(limited).toBeInstanceOf(OpenAI.RateLimitError);
    expect((limited as InstanceType<typeof OpenAI.RateLimitError>).headers?.get('retry-after')).toMatch(/^\d+$/);
    await server.stop();
  });

  it('sends a conversation to an openai-provider upstream as chat messages, and a cancel aborts the upstream call', {
    timeout: 60_000,
  }, async () => {
    const upstream = await startFakeOpenAi({
      delayMs: (() => {
        let calls = 0;
        // The first call answers at once; the second hangs long enough to be cancelled.
        return () => (++calls === 1 ? 0 : 20_000);
      })(),
    });
    try {
      const box = newBox('airs-sdk-upstream');
      box.writeConfig({
        models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
      });
      const server = await startServer(box);
      const { key } = await createAccountWithKey(box, 'sdk-upstream@example.com', 'scale');
      const client = sdk(server, key);
      const answer = await client.responses.create({
        model: 'llm',
        instructions: 'You are terse.',
        input: [
          { role: 'developer', content: 'Answer in one word.' },
          { role: 'user', content: 'Hello?' },
        ],
      });
      expect(upstream.received[0]?.body.messages).toEqual([
        { role: 'system', content: 'You are terse.' },
        { role: 'system', content: 'Answer in one word.' },
        { role: 'user', content: 'Hello?' },
      ]);
      expect(answer.output_text).toBe('upstream says: Hello?');

      const hanging = await client.responses.create({ model: 'llm', input: 'take your time', background: true });
      for (let i = 0; i < 100 && upstream.received.length < 2; i++) await sleep(20);
      expect(upstream.received).toHaveLength(2);
      expect(upstream.abandoned()).toBe(0);
      expect((await client.responses.cancel(hanging.id)).status).toBe('cancelled');
      // The upstream sees its caller go away: the call was aborted, not left to run for 20 s.
      for (let i = 0; i < 100 && upstream.abandoned() === 0; i++) await sleep(20);
      expect(upstream.abandoned()).toBe(1);
      expect(await server.stop()).toBe(0);
    } finally {
      await upstream.close();
    }
  });
});
