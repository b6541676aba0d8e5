import { afterEach, describe, expect, it } from 'vitest';
import { newWebhookSecret } from '../../src/app/webhooks/signing.js';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { startTestApp, type TestApp, type TestAppOptions, type TestConfig } from '../support/testApp.js';

/**
 * A request made by `POST /v1/responses` keeps the face it came in by (`face: 'responses'` on its `RequestQueued`),
 * which is what makes its ending send `response.*` webhooks beside `request.*` ones (domain/webhook/dueDeliveries.ts).
 * A chat completion and a `/v1/ai` submit store the same kind of input and must not be taken for one.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 120_000 });

const config: TestConfig = {
  models: [echo('echo', 0), echo('slow', 60_000)],
  processing: { concurrency: 4, maxAttempts: 1 },
};

type StoreCase = { readonly name: string; readonly options: () => TestAppOptions };

const stores: readonly StoreCase[] = [
  { name: 'LMDB', options: () => ({ store: 'lmdb' }) },
  { name: 'the memory store', options: () => ({ store: 'memory' }) },
];

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});

const reqIdOf = (responseId: string) => `req_${responseId.slice('resp_'.length)}`;

describe.each(stores)('The face a request came in by, on $name', ({ options }) => {
  const start = async () => {
    const app = await startTestApp({ ...options(), config, clock: systemClock });
    apps.push(app);
    return app;
  };

  it('is kept as responses for a background, a waiting and a streamed POST /v1/responses', async () => {
    const app = await start();
    const { key } = await app.account();
    const bodies = [
      { model: 'slow', input: 'in the background', background: true },
      { model: 'echo', input: 'waiting for it' },
      { model: 'echo', input: 'streamed', stream: true },
    ];
    for (const body of bodies) {
      const response = await app.call('POST', '/v1/responses', { key, body });
      expect(response.status).toBe(200);
      const text = await response.text();
      const id = body.stream === true ? /"id":"(resp_[^"]+)"/.exec(text)?.[1] : (JSON.parse(text) as { id: string }).id;
      expect(id).toMatch(/^resp_/);
      const stored = await app.store.reads.request(reqIdOf(id as string));
      expect(stored?.context.face).toBe('responses');
    }
  });

  it('is not kept for a chat completion or a POST /v1/ai submit', async () => {
    const app = await start();
    const { key } = await app.account();
    const chat = await app.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'echo', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(chat.status).toBe(200);
    const chatId = ((await chat.json()) as { id: string }).id;
    const chatRequest = await app.store.reads.request(`req_${chatId.slice('chatcmpl-'.length)}`);
    expect(chatRequest).toBeDefined();
    expect(chatRequest?.context.face).toBeUndefined();

    const ai = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } });
    expect(ai.status).toBe(202);
    const aiRequest = await app.store.reads.request(((await ai.json()) as { request_id: string }).request_id);
    expect(aiRequest).toBeDefined();
    expect(aiRequest?.context.face).toBeUndefined();
  });

  it('makes a Responses request end with response.* and request.* webhooks, and a chat completion with request.* only', async () => {
    const app = await start();
    const { key, accountId } = await app.account();
    const endpointId = `whep_${'F'.repeat(16)}`;
    await app.store.commit({
      commands: [
        {
          type: 'WebhookEndpoint',
          endpointId,
          command: {
            type: 'AddEndpoint',
            accountId,
            url: 'https://hooks.example.com/airs',
            events: [],
            secretId: 'sec_face',
            secret: newWebhookSecret(),
            plans: defaultPlans,
            allowHttp: false,
            now: Date.now(),
          },
        },
      ],
    });
    const created = await app.call('POST', '/v1/responses', { key, body: { model: 'echo', input: 'hi' } });
    const responseId = ((await created.json()) as { id: string; status: string }).id;
    const chat = await app.call('POST', '/v1/chat/completions', {
      key,
      body: { model: 'echo', messages: [{ role: 'user', content: 'hi' }] },
    });
    const chatReqId = `req_${((await chat.json()) as { id: string }).id.slice('chatcmpl-'.length)}`;
    const deliveries = await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 10 });
    const made = deliveries.map((d) => `${d.context.eventType} ${d.context.dataId}`).sort();
    expect(made).toEqual(
      [
        `request.completed ${reqIdOf(responseId)}`,
        `response.completed ${responseId}`,
        `request.completed ${chatReqId}`,
      ].sort(),
    );
  });
});
