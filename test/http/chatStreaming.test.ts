import { afterEach, describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import { systemClock } from '../../src/ports/Clock.js';
import { postOverSocket } from '../support/socketCall.js';
import { dataOf, framesOf } from '../support/sse.js';
import {
  eventually,
  listen,
  loggedEvents,
  startTestApp,
  type TestApp,
  type TestAppOptions,
  type TestConfig,
} from '../support/testApp.js';
import { checkedText } from './support/checkedAnswer.js';

/**
 * Streaming chat completions and waiting creates over real sockets (contract 13): the chunks as a client reads them,
 * keep-alive comments while a request waits in the queue, and a caller that goes away cancelling its request (a
 * waiting or streaming create is no background request), but not when the server itself is stopping.
 */

const echo = (id: string, delayMs: number): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 600_000 });

const config: TestConfig = {
  models: [echo('echo', 0), echo('slow', 600_000)],
  processing: { concurrency: 1, maxAttempts: 1 },
};

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
afterEach(async () => {
  await server?.close();
  await app?.stop();
  server = undefined;
  app = undefined;
});

const start = async (options: TestAppOptions = {}) => {
  app = await startTestApp({ clock: systemClock, ...options, config: { ...config, ...options.config } });
  server = await listen(app);
  const { key, accountId, keyId } = await app.account('scale');
  return { app, url: server.url, key, principal: { accountId, keyId, plan: 'scale' as const } };
};

const hello = [{ role: 'user', content: 'Hello over a socket' }];

const typesOf = async (testApp: TestApp, reqId: string) =>
  (await loggedEvents(testApp)).filter((e) => 'reqId' in e && e.reqId === reqId).map((e) => e.type);

/** The request ids queued so far, in order. */
const queuedIds = async (testApp: TestApp) =>
  (await loggedEvents(testApp)).flatMap((e) => (e.type === 'RequestQueued' ? [e.reqId] : []));

describe('A streamed chat completion over a socket', () => {
  it('arrives as text/event-stream chunks with x-request-id, ending with [DONE]', async () => {
    const { url, key } = await start();
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'echo',
      messages: hello,
      stream: true,
      stream_options: { include_usage: true },
    }).answered;
    expect(call.status).toBe(200);
    expect(call.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(call.headers['cache-control']).toBe('no-cache');
    const reqId = String(call.headers['x-request-id']);
    expect(reqId).toMatch(/^req_/);
    const frames = framesOf(await checkedText('POST', '/v1/chat/completions', call));
    expect(frames.at(-1)).toEqual({ kind: 'done' });
    const chunks = dataOf(frames) as { id: string; choices: { delta: unknown; finish_reason: unknown }[] }[];
    expect(new Set(chunks.map((chunk) => chunk.id))).toEqual(new Set([`chatcmpl-${reqId.slice(4)}`]));
    expect(chunks.map((chunk) => chunk.choices[0]?.delta ?? 'usage')).toEqual([
      { role: 'assistant', content: '' },
      { content: 'Hello over a socket' },
      {},
      'usage',
    ]);
  });

  it('sends an SSE comment while the request waits in the queue, and ends with an error event when it is cancelled', async () => {
    const { app, url, key, principal } = await start({ streamKeepAliveMs: 100 });
    // The only worker is busy with another request: the streamed one waits in the queue.
    postOverSocket(url, '/v1/chat/completions', key, { model: 'slow', messages: hello });
    await eventually(async () => ((await queuedIds(app)).length === 1 ? true : undefined));
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'echo',
      messages: hello,
      stream: true,
    }).answered;
    const reqId = String(call.headers['x-request-id']);
    expect(await call.frames.next()).toMatchObject({
      kind: 'data',
      data: { choices: [{ delta: { role: 'assistant' } }] },
    });
    expect(await call.frames.next()).toEqual({ kind: 'comment', text: 'waiting' });
    expect(await call.frames.next()).toEqual({ kind: 'comment', text: 'waiting' });
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued']);
    await app.requests.cancel(principal, reqId);
    const rest = (await call.frames.rest()).filter((frame) => frame.kind !== 'comment');
    expect(rest).toEqual([
      {
        kind: 'data',
        data: {
          error: expect.objectContaining({ code: 'not_found', message: expect.stringMatching(/was cancelled/) }),
        },
      },
    ]);
  });

  it('cancels its request when the caller drops the connection mid-stream', async () => {
    const { app, url, key } = await start();
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'slow',
      messages: hello,
      stream: true,
    }).answered;
    const reqId = String(call.headers['x-request-id']);
    expect(await call.frames.next()).toMatchObject({ kind: 'data' });
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted']);
    call.drop();
    await eventually(async () => ((await typesOf(app, reqId)).includes('RequestCancelled') ? true : undefined));
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
  });
});

describe('A stream whose server stops', () => {
  it('ends (the caller is not left hanging), and its request is not cancelled', async () => {
    const { app, url, key } = await start();
    const call = await postOverSocket(url, '/v1/chat/completions', key, {
      model: 'slow',
      messages: hello,
      stream: true,
    }).answered;
    const reqId = String(call.headers['x-request-id']);
    expect(await call.frames.next()).toMatchObject({ kind: 'data' });
    app.stopAccepting();
    await server?.close();
    server = undefined;
    // The stream ends, cleanly or with a reset: either way the reader is done.
    await call.frames.rest().catch(() => []);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted']);
  });
});

describe('A waiting create whose caller goes away', () => {
  it.each([
    ['POST /v1/chat/completions', '/v1/chat/completions', { model: 'slow', messages: hello }],
    ['POST /v1/responses', '/v1/responses', { model: 'slow', input: 'Hello over a socket' }],
  ])('%s: the request is cancelled, and its model call aborted', async (_name, path, body) => {
    const { app, url, key } = await start();
    const call = postOverSocket(url, path, key, body);
    await eventually(async () => ((await queuedIds(app)).length === 1 ? true : undefined));
    const [reqId] = (await queuedIds(app)) as [string];
    await eventually(async () => ((await typesOf(app, reqId)).includes('RequestProcessingStarted') ? true : undefined));
    call.drop();
    await eventually(async () => ((await typesOf(app, reqId)).includes('RequestCancelled') ? true : undefined));
    await app.processor.idle();
    expect(await typesOf(app, reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCancelled']);
  });

  it('is not cancelled when the connection closes because the server stops', async () => {
    const { app, url, key } = await start();
    const call = postOverSocket(url, '/v1/chat/completions', key, { model: 'slow', messages: hello });
    await eventually(async () => ((await queuedIds(app)).length === 1 ? true : undefined));
    const [reqId] = (await queuedIds(app)) as [string];
    app.stopAccepting();
    await server?.close();
    server = undefined;
    await expect(call.answered).rejects.toThrow();
    // Give a cancel that should not happen every chance to be written.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await typesOf(app, reqId)).not.toContain('RequestCancelled');
  });
});
