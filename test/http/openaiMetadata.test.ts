import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { sseEventsOf } from '../support/sseFrames.js';
import { loggedEvents, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';

/**
 * `metadata` on the OpenAI face: kept with the request as OpenAI keeps it (at most 16 pairs, keys at most 64
 * characters, values strings of at most 512), shown by every Response of it (the create, a retrieve, a stream's
 * events, a cancel), refused beyond the bounds with 400 naming `metadata`. Chat completions keep it too.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 120_000 });

const config: TestConfig = {
  models: [echo('echo', 0), echo('slow', 60_000)],
  processing: { concurrency: 4, maxAttempts: 1 },
};

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});
const start = async () => {
  const app = await startTestApp({ config, clock: systemClock });
  apps.push(app);
  return app;
};

type Answer = { readonly status: number; readonly body: Record<string, unknown> };
const call = async (app: TestApp, method: string, path: string, key: string, body?: unknown): Promise<Answer> => {
  const response = await app.call(method, path, { key, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const reqIdOf = (responseId: string) => `req_${responseId.slice('resp_'.length)}`;

const pairs = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));

const metadata = { team: 'search', run: '42', note: 'two\nlines\tand a tab', 'ключ ✓': 'значение 🎉' };

describe('metadata on POST /v1/responses', () => {
  it('is answered by the create, a retrieve and a cancel, and kept in the request’s own record', async () => {
    const app = await start();
    const { key } = await app.account();
    const created = await call(app, 'POST', '/v1/responses', key, {
      model: 'slow',
      input: 'hello',
      background: true,
      metadata,
    });
    expect(created.status).toBe(200);
    expect(created.body.metadata).toEqual(metadata);
    // In the given order, as the JSON of the object: what RequestQueued carries and the view holds.
    const id = created.body.id as string;
    expect((await app.store.reads.request(reqIdOf(id)))?.context.metadata).toBe(JSON.stringify(metadata));
    const retrieved = await call(app, 'GET', `/v1/responses/${id}`, key);
    expect(retrieved.body.metadata).toEqual(metadata);
    expect(Object.keys(retrieved.body.metadata as object)).toEqual(Object.keys(metadata));
    const cancelled = await call(app, 'POST', `/v1/responses/${id}/cancel`, key);
    expect(cancelled.body).toMatchObject({ status: 'cancelled', metadata });
  });

  it('is answered by a waiting create once completed, and by each Response of its stream', async () => {
    const app = await start();
    const { key } = await app.account();
    const waited = await call(app, 'POST', '/v1/responses', key, { model: 'echo', input: 'hi', metadata: { a: 'b' } });
    expect(waited.body).toMatchObject({ status: 'completed', metadata: { a: 'b' } });

    const streamed = await app.call('POST', '/v1/responses', {
      key,
      body: { model: 'echo', input: 'hi', stream: true, metadata: { a: 'c' } },
    });
    const events = sseEventsOf(await streamed.text());
    const withResponse = events.filter((event) => event.response !== undefined);
    expect(withResponse.map((event) => event.type)).toEqual([
      'response.created',
      'response.in_progress',
      'response.completed',
    ]);
    for (const event of withResponse) expect((event.response as { metadata: unknown }).metadata).toEqual({ a: 'c' });

    const id = (withResponse[0]?.response as { id: string } | undefined)?.id ?? '';
    const replayed = sseEventsOf(await (await app.call('GET', `/v1/responses/${id}?stream=true`, { key })).text());
    expect(replayed.filter((event) => event.response !== undefined).map((event) => event.response)).toEqual(
      expect.arrayContaining([expect.objectContaining({ metadata: { a: 'c' } })]),
    );
  });

  it('is {} when absent, null or empty, and then nothing is kept', async () => {
    const app = await start();
    const { key } = await app.account();
    for (const given of [undefined, null, {}]) {
      const created = await call(app, 'POST', '/v1/responses', key, {
        model: 'echo',
        input: 'hi',
        background: true,
        metadata: given,
      });
      expect(created.body.metadata).toEqual({});
      const context = (await app.store.reads.request(reqIdOf(created.body.id as string)))?.context;
      expect(context === undefined ? 'missing' : 'metadata' in context).toBe(false);
    }
  });

  it('takes exactly OpenAI’s bounds: 16 pairs, keys of 64 characters, values of 512 (characters, not UTF-16 units)', async () => {
    const app = await start();
    const { key } = await app.account();
    const full = Object.fromEntries(
      Array.from({ length: 16 }, (_, i) => [`${String(i).padStart(2, '0')}${'k'.repeat(62)}`, '🎉'.repeat(512)]),
    );
    const created = await call(app, 'POST', '/v1/responses', key, {
      model: 'echo',
      input: 'hi',
      background: true,
      metadata: full,
    });
    expect(created.status).toBe(200);
    expect(created.body.metadata).toEqual(full);
    expect((await call(app, 'GET', `/v1/responses/${created.body.id}`, key)).body.metadata).toEqual(full);
  });

  it.each([
    ['17 pairs', pairs(17), /at most 16 key-value pairs/],
    ['a key of 65 characters', { ['k'.repeat(65)]: 'v' }, /keys must be at most 64 characters/],
    ['a value of 513 characters', { k: 'v'.repeat(513) }, /values must be at most 512 characters/],
    ['a value that is a number', { k: 1 }, /the value of "k" must be a string/],
    ['a value that is an object', { k: { nested: 'v' } }, /must be a string/],
    ['a list', ['a', 'b'], /must be an object of string keys and string values/],
    ['a string', 'team=a', /must be an object/],
    ['NUL in a value', { k: 'a\u0000b' }, /without control characters/],
    ['an escape in a value', { k: '\u001b[31mred' }, /without control characters/],
    ['a control character in a key', { 'k\u0007': 'v' }, /keys must be text without control characters/],
    ['a line feed in a key', { 'k\n': 'v' }, /keys must be text without control characters/],
    ['an unpaired surrogate in a value', { k: 'a\ud800' }, /without control characters/],
  ])('refuses %s with 400 invalid_request_error naming metadata, and queues nothing', async (_, given, message) => {
    const app = await start();
    const { key } = await app.account();
    const refused = await call(app, 'POST', '/v1/responses', key, { model: 'echo', input: 'hi', metadata: given });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', param: 'metadata' });
    expect((refused.body.error as { message: string }).message).toMatch(/^metadata: /);
    expect((refused.body.error as { message: string }).message).toMatch(message);
    expect((await loggedEvents(app)).filter((event) => event.type === 'RequestQueued')).toEqual([]);
  });
});

describe('metadata on POST /v1/chat/completions', () => {
  it('is kept with the request, bounded as on the Responses API', async () => {
    const app = await start();
    const { key } = await app.account();
    const completed = await call(app, 'POST', '/v1/chat/completions', key, {
      model: 'echo',
      messages: [{ role: 'user', content: 'hi' }],
      store: true,
      metadata: { a: 'b' },
    });
    expect(completed.status).toBe(200);
    const reqId = `req_${(completed.body.id as string).slice('chatcmpl-'.length)}`;
    expect((await app.store.reads.request(reqId))?.context.metadata).toBe('{"a":"b"}');
    // OpenAI's chat completion object has no metadata: nothing is added to it.
    expect(completed.body).not.toHaveProperty('metadata');

    const refused = await call(app, 'POST', '/v1/chat/completions', key, {
      model: 'echo',
      messages: [{ role: 'user', content: 'hi' }],
      metadata: pairs(17),
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ type: 'invalid_request_error', param: 'metadata' });
  });
});
