import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createHttpApp } from '../../src/adapters/http/app.js';
import { responseFrames } from '../../src/adapters/http/openai/responseStream.js';
import { createOpenCalls } from '../../src/adapters/http/openCalls.js';
import { followRequest } from '../../src/app/followRequest.js';
import { createLiveOutput, type LiveOutputShape } from '../../src/app/LiveOutput.js';
import type { RequestView } from '../../src/app/Requests.js';
import type { ModelConfig } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import { sseEventsOf, sseFramesOf, sseReader } from '../support/sseFrames.js';
import { type CallInit, eventually, listen, startTestApp, type TestApp, type TestConfig } from '../support/testApp.js';

/**
 * Streaming on `/v1/responses` (contract 13): `stream: true` on a create, and `GET /v1/responses/{id}?stream=true`
 * with `starting_after`, as OpenAI's event sequence with `sequence_number`s; keep-alive comments while the request
 * waits; a streaming create that is not `background` cancels its request when its caller goes away.
 */

const echo = (id: string, delayMs: number, timeoutMs = 60_000): ModelConfig => ({
  id,
  provider: 'echo',
  delayMs,
  timeoutMs,
});

const streamConfig: TestConfig = {
  models: [echo('echo', 0), echo('slow', 60_000, 120_000), echo('doomed', 60_000, 1)],
  processing: { concurrency: 4, maxAttempts: 1 },
};

const apps: TestApp[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.stop();
});
const start = async () => {
  const app = await startTestApp({ config: streamConfig, clock: systemClock });
  apps.push(app);
  return app;
};

const post = (app: TestApp, key: string, body: unknown, init: CallInit = {}) =>
  app.call('POST', '/v1/responses', { ...init, key, body });

const typesOf = (events: Record<string, unknown>[]) => events.map((event) => event.type);

const completedSequence = [
  'response.created',
  'response.in_progress',
  'response.output_item.added',
  'response.content_part.added',
  'response.output_text.delta',
  'response.output_text.done',
  'response.content_part.done',
  'response.output_item.done',
  'response.completed',
];

/** The Response id a `response.*` event carries. */
const idIn = (event: Record<string, unknown> | undefined): string =>
  (event?.response as { id?: string } | undefined)?.id ?? '';

const reqIdOf = (responseId: string) => `req_${responseId.slice('resp_'.length)}`;

describe('POST /v1/responses with stream: true', () => {
  it('answers text/event-stream with OpenAI’s event sequence, numbered from 0, ending with the completed Response', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await post(app, key, { model: 'echo', input: 'Hello there', stream: true });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(answer.headers.get('cache-control')).toBe('no-cache');
    expect(answer.headers.get('ratelimit-policy')).toBe('"submits";q=60;w=60');
    const text = await answer.text();
    const frames = sseFramesOf(text);
    // Every event is named by its type, as OpenAI names them.
    for (const frame of frames) if (frame.kind === 'event') expect(frame.event).toBe(frame.data.type);
    const events = sseEventsOf(text);
    expect(typesOf(events)).toEqual(completedSequence);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, i) => i));
    const [created, inProgress, added, partAdded, delta, textDone, partDone, itemDone, completed] = events;
    const id = idIn(created);
    expect(id).toMatch(/^resp_[A-Za-z0-9_-]{22,}$/);
    expect(created?.response).toMatchObject({ id, object: 'response', status: 'queued', output: [], usage: null });
    expect(inProgress?.response).toMatchObject({ id, status: 'in_progress', output: [] });
    const itemId = `msg_${id.slice('resp_'.length)}`;
    expect(added).toMatchObject({
      output_index: 0,
      item: { type: 'message', id: itemId, status: 'in_progress', role: 'assistant', content: [] },
    });
    expect(partAdded).toMatchObject({
      item_id: itemId,
      output_index: 0,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [] },
    });
    expect(delta).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, delta: 'Hello there' });
    expect(textDone).toMatchObject({ item_id: itemId, output_index: 0, content_index: 0, text: 'Hello there' });
    expect(partDone).toMatchObject({ part: { type: 'output_text', text: 'Hello there' } });
    expect(itemDone).toMatchObject({
      output_index: 0,
      item: {
        type: 'message',
        id: itemId,
        status: 'completed',
        content: [{ type: 'output_text', text: 'Hello there' }],
      },
    });
    expect(completed?.response).toMatchObject({
      id,
      status: 'completed',
      output: [{ type: 'message', content: [{ text: 'Hello there' }] }],
      usage: { input_tokens: 2, output_tokens: 2, total_tokens: 4 },
    });
    // The same request as every other face sees it, completed with the text the stream gave.
    const retrieved = (await (await app.call('GET', `/v1/responses/${id}`, { key })).json()) as Record<string, unknown>;
    expect(retrieved).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'Hello there' }] }] });
    const polled = (await (await app.call('GET', `/v1/ai?req_id=${reqIdOf(id)}`, { key })).json()) as Record<
      string,
      unknown
    >;
    expect(polled).toMatchObject({ status: 'completed', response: 'Hello there' });
  });

  it('ends a failed request’s stream with response.failed carrying the Response’s error', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await post(app, key, { model: 'doomed', input: 'x', stream: true });
    const events = sseEventsOf(await answer.text());
    expect(typesOf(events)).toEqual(['response.created', 'response.in_progress', 'response.failed']);
    expect(events[2]?.response).toMatchObject({
      status: 'failed',
      output: [],
      error: { code: 'server_error', type: 'server_error', message: expect.stringMatching(/failed after its retries/) },
    });
  });

  it('cancels a streamed request that is not background when its caller goes away, and leaves a background one', async () => {
    const app = await start();
    const { key } = await app.account();
    for (const background of [false, true]) {
      const answer = await post(app, key, { model: 'slow', input: 'x', stream: true, background });
      const reader = sseReader(answer.body as ReadableStream<Uint8Array>);
      const created = await reader.next();
      const id = idIn(created?.kind === 'event' ? created.data : undefined);
      await reader.stop();
      const status = async () =>
        ((await (await app.call('GET', `/v1/responses/${id}`, { key })).json()) as { status: string }).status;
      if (background) {
        // Given time to be cancelled wrongly, it is still there.
        await new Promise((resolve) => setTimeout(resolve, 200));
        expect(await status()).toBe('in_progress');
      } else await eventually(async () => ((await status()) === 'cancelled' ? true : undefined));
    }
  });

  it('leaves the request of a stream the server closes while stopping to complete, rather than cancelling it', async () => {
    const app = await start();
    const { key } = await app.account();
    const answer = await post(app, key, { model: 'slow', input: 'x', stream: true });
    const reader = sseReader(answer.body as ReadableStream<Uint8Array>);
    const created = await reader.next();
    const reqId = reqIdOf(idIn(created?.kind === 'event' ? created.data : undefined));
    app.stopAccepting();
    await reader.stop();
    // Given time to be cancelled wrongly, it is still being worked on (GET answers 503 while stopping).
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect((await app.store.reads.request(reqId))?.status).toBe('processing');
  });

  it('refuses tools and a JSON schema on an echo model with 400 naming tools and text.format', async () => {
    const app = await start();
    const { key } = await app.account();
    const tools = [{ type: 'function', name: 'get_weather', parameters: { type: 'object', properties: {} } }];
    const withTools = await post(app, key, { model: 'echo', input: 'x', stream: true, tools });
    expect(withTools.status).toBe(400);
    expect(((await withTools.json()) as { error: { param: string } }).error.param).toBe('tools');
    const format = { type: 'json_schema', name: 'answer', schema: { type: 'object' } };
    const withSchema = await post(app, key, { model: 'echo', input: 'x', stream: true, text: { format } });
    expect(withSchema.status).toBe(400);
    const refused = (await withSchema.json()) as { error: { param: string; message: string } };
    expect(refused.error).toMatchObject({ param: 'text.format', message: expect.stringMatching(/^text\.format: /) });
  });
});

describe('GET /v1/responses/{id}?stream=true', () => {
  it('replays a completed request’s events the same way every time, and from starting_after + 1', async () => {
    const app = await start();
    const { key } = await app.account();
    const created = (await (await post(app, key, { model: 'echo', input: 'one two three' })).json()) as { id: string };
    const replay = async (query: string) => {
      const answer = await app.call('GET', `/v1/responses/${created.id}?stream=true${query}`, { key });
      expect(answer.status).toBe(200);
      expect(answer.headers.get('ratelimit-policy')).toBe('"polls";q=600;w=60');
      return sseEventsOf(await answer.text());
    };
    const first = await replay('');
    expect(typesOf(first)).toEqual(completedSequence);
    expect(first[4]).toMatchObject({ delta: 'one two three' });
    expect(await replay('')).toEqual(first);
    expect(await replay('&starting_after=3')).toEqual(first.slice(4));
    expect(await replay('&starting_after=8')).toEqual([]);
    expect(await replay('&starting_after=100')).toEqual([]);
  });

  it('follows a queued request until it is cancelled, ending with an error event naming the cancellation', async () => {
    const app = await start();
    const { key } = await app.account();
    const created = (await (await post(app, key, { model: 'slow', input: 'x', background: true })).json()) as {
      id: string;
    };
    const answer = await app.call('GET', `/v1/responses/${created.id}?stream=true`, { key });
    const reader = sseReader(answer.body as ReadableStream<Uint8Array>);
    expect(await reader.next()).toMatchObject({ data: { type: 'response.created', sequence_number: 0 } });
    expect(await reader.next()).toMatchObject({ data: { type: 'response.in_progress', sequence_number: 1 } });
    expect((await app.call('POST', `/v1/responses/${created.id}/cancel`, { key })).status).toBe(200);
    const last = await reader.next();
    expect(last).toMatchObject({
      data: {
        type: 'error',
        code: 'cancelled',
        sequence_number: 2,
        error: { code: 'cancelled', message: `request ${created.id} was cancelled; it will not be processed` },
      },
    });
    expect(await reader.next()).toBeUndefined();
  });

  it('refuses a stream flag that is not true or false, and starting_after that is not a whole number or without a stream', async () => {
    const app = await start();
    const { key } = await app.account();
    const created = (await (await post(app, key, { model: 'echo', input: 'x', background: true })).json()) as {
      id: string;
    };
    for (const [query, param] of [
      ['stream=yes', 'stream'],
      ['stream=true&starting_after=-1', 'starting_after'],
      ['stream=true&starting_after=1.5', 'starting_after'],
      ['stream=true&starting_after=', 'starting_after'],
      ['starting_after=2', 'starting_after'],
    ] as const) {
      const answer = await app.call('GET', `/v1/responses/${created.id}?${query}`, { key });
      expect(answer.status, query).toBe(400);
      expect(((await answer.json()) as { error: { param: string } }).error.param, query).toBe(param);
    }
    // `stream=false` is the JSON Response, as without it.
    const plain = await app.call('GET', `/v1/responses/${created.id}?stream=false`, { key });
    expect(plain.headers.get('content-type')).toMatch(/^application\/json/);
  });
});

describe('listening', () => {
  /** A LiveOutput that counts the listeners it holds. */
  const countingLive = () => {
    const live = createLiveOutput();
    let listeners = 0;
    const counted: LiveOutputShape = {
      ...live,
      listen: (reqId, listener) => {
        listeners++;
        const stop = live.listen(reqId, listener);
        return () => {
          listeners--;
          stop();
        };
      },
    };
    return { live: counted, listeners: () => listeners };
  };

  it('holds no listener once a streaming create is refused after it began to listen, or answered an earlier request', async () => {
    const app = await startTestApp({
      config: { ...streamConfig, plans: { ...defaultPlans, free: { ...defaultPlans.free, maxQueued: 1 } } },
      clock: systemClock,
    });
    apps.push(app);
    const { live, listeners } = countingLive();
    const http = createHttpApp({
      auth: app.auth,
      rateLimiter: app.rateLimiter,
      requests: app.requests,
      live,
      log: silentLogger(),
      maxBodyBytes: app.config.maxBodyBytes,
      jsonBounds: { maxDepth: 64, maxValues: 100_000 },
      pollIntervalSeconds: 1,
      accepting: () => true,
      models: app.config.models,
      openCalls: createOpenCalls({ ...app.config.http, plans: app.config.plans, retryAfterSeconds: 1 }),
    });
    const { key } = await app.account('free');
    const call = (body: unknown, headers: Record<string, string> = {}) =>
      http.request('http://airs.test/v1/responses', {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
      });
    // A streaming create of an instant model, repeated with its idempotency key: the repeat streams the first request.
    const once = { 'idempotency-key': 'stream-once' };
    const first = await call({ model: 'echo', input: 'once', stream: true }, once);
    const firstEvents = sseEventsOf(await first.text());
    const repeat = await call({ model: 'echo', input: 'once', stream: true }, once);
    expect(repeat.headers.get('idempotent-replayed')).toBe('true');
    expect(sseEventsOf(await repeat.text()).at(-1)).toEqual(firstEvents.at(-1));
    expect(listeners()).toBe(0);
    // The account's one place in the queue is taken: the streaming create is refused after it began to listen.
    expect((await call({ model: 'slow', input: 'x', background: true })).status).toBe(200);
    const refused = await call({ model: 'slow', input: 'y', stream: true });
    expect(refused.status).toBe(429);
    expect(listeners()).toBe(0);
  });
});

describe('keep-alive while the request waits', () => {
  it('writes a keep-alive comment after each idle interval while the request waits', async () => {
    const app = await start();
    const { key } = await app.account();
    const created = (await (await post(app, key, { model: 'slow', input: 'x', background: true })).json()) as {
      id: string;
    };
    const principal = await app.auth.authenticate(`Bearer ${key}`);
    if ('_tag' in principal) throw new Error('no principal');
    const reqId = reqIdOf(created.id);
    const first = (await app.requests.find(principal, reqId)) as RequestView;
    const stop = new AbortController();
    const frames = responseFrames(first, {
      requests: app.requests,
      principal,
      reqId,
      follower: followRequest(app.live),
      signal: stop.signal,
      idleMs: 50,
    });
    const seen: string[] = [];
    for await (const frame of frames) {
      seen.push(frame);
      if (seen.filter((f) => f.startsWith(': ')).length === 3) break;
    }
    expect(seen.slice(0, 2).map((f) => sseFramesOf(f)[0])).toMatchObject([
      { kind: 'event', data: { type: 'response.created' } },
      { kind: 'event', data: { type: 'response.in_progress' } },
    ]);
    expect(seen.slice(2)).toEqual([': keep-alive\n\n', ': keep-alive\n\n', ': keep-alive\n\n']);
    stop.abort();
  });
});

describe('over a real socket', () => {
  it('streams a create and cancels it when the client drops the connection', async () => {
    const app = await start();
    const server = await listen(app);
    const { key } = await app.account();
    try {
      const id = await new Promise<string>((resolve, reject) => {
        const call = httpRequest(
          `${server.url}/v1/responses`,
          { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' } },
          (response) => {
            expect(response.headers['content-type']).toBe('text/event-stream; charset=utf-8');
            response.setEncoding('utf8').once('data', (chunk: string) => {
              const [first] = sseEventsOf(chunk);
              resolve(idIn(first));
              // The client goes away mid-stream.
              call.destroy();
            });
          },
        );
        call.on('error', (error) => (error.message === 'socket hang up' ? undefined : reject(error)));
        call.end(JSON.stringify({ model: 'slow', input: 'x', stream: true }));
      });
      await eventually(async () => {
        const answer = (await (await app.call('GET', `/v1/responses/${id}`, { key })).json()) as { status: string };
        return answer.status === 'cancelled' ? true : undefined;
      });
    } finally {
      await server.close();
    }
  });
});
