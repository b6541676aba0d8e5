import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/ports/Clock.js';
import { dataDirViewDifferences } from '../support/lmdbData.js';
import { submit } from '../support/submit.js';
import { eventually, startTestApp, syncReads, type TestApp } from '../support/testApp.js';

const dayMs = 86_400_000;

describe('Expiry and retention', () => {
  let app: TestApp;
  afterEach(() => app?.stop());

  const typesOf = (reqId: string) =>
    [...syncReads(app).events()].filter((e) => 'reqId' in e && e.reqId === reqId).map((e) => e.type);

  it('answers 404 from the expiry time on, before the sweeper has written anything', async () => {
    app = await startTestApp();
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    const reqId = await submit(app, key, { prompt: 'secret prompt' });
    await app.processor.idle();
    clock.advance(dayMs - 1);
    expect((await app.call('GET', `/v1/ai?req_id=${reqId}`, { key })).status).toBe(200);
    clock.advance(1);
    const expired = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(expired.status).toBe(404);
    expect(((await expired.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect(typesOf(reqId)).not.toContain('RequestExpired');
  });

  it('says in its 404 how long requests live under the configured lifetime', async () => {
    app = await startTestApp({ config: { requestTtlSeconds: 3_600 } });
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    const reqId = await submit(app, key, { prompt: 'secret prompt' });
    await app.processor.idle();
    clock.advance(3_600_000);
    const expired = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    const { error } = (await expired.json()) as { error: { message: string } };
    expect(error.message).toMatch(/\(requests live 1 hour\)$/);
  });

  it('keeps the prompt until the request settles and the response until it expires; the log keeps ids, times and sizes', async () => {
    app = await startTestApp({
      config: { models: [{ id: 'slow', provider: 'echo', delayMs: 300, timeoutMs: 10_000 }] },
    });
    const clock = app.clock as ManualClock;
    const { accountId, keyId } = await app.account();
    // A conversation, so that the answer (echo's: the last user message) differs from the input as kept.
    const instruction = 'Answer in one word.';
    await app.requests.submitInput(
      { accountId, keyId, plan: 'free' },
      {
        model: 'slow',
        prompt: 'secret prompt',
        messages: [
          { role: 'system', content: instruction },
          { role: 'user', content: 'secret prompt' },
        ],
      },
    );
    const queued = [...syncReads(app).events()].find((event) => event.type === 'RequestQueued');
    const reqId = (queued as { reqId: string }).reqId;
    // Not settled yet: the record holds the input, the whole conversation.
    const unsettled = syncReads(app).requestWithText(reqId);
    expect(['waiting', 'processing']).toContain(unsettled?.state.status);
    expect(JSON.parse(unsettled?.text ?? '{}')).toEqual({
      messages: [
        { role: 'system', content: instruction },
        { role: 'user', content: 'secret prompt' },
      ],
    });
    await app.processor.idle();
    // Completed: the record holds the response alone; the input is not needed any more and is gone.
    expect(syncReads(app).requestWithText(reqId)).toMatchObject({
      state: { status: 'completed' },
      text: 'secret prompt',
    });
    clock.advance(dayMs);
    expect(await app.sweeper.sweep()).toBe(1);
    expect(typesOf(reqId)).toEqual(['RequestQueued', 'RequestProcessingStarted', 'RequestCompleted', 'RequestExpired']);
    expect(syncReads(app).requestWithText(reqId)).toMatchObject({ state: { status: 'expired' }, text: undefined });
    expect(syncReads(app).request(reqId)?.context).toMatchObject({
      reqId,
      promptChars: unsettled?.text?.length,
      responseChars: 13,
    });
    const log = JSON.stringify([...syncReads(app).events()]);
    expect(log).not.toContain('secret prompt');
    expect(log).not.toContain(instruction);
    expect(await app.sweeper.sweep()).toBe(0);
  });

  it('never processes a request that is still queued when its time runs out', async () => {
    app = await startTestApp({
      config: {
        models: [
          { id: 'slow', provider: 'echo', delayMs: 150, timeoutMs: 10_000 },
          { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 10_000 },
        ],
        processing: { concurrency: 1, maxAttempts: 1 },
      },
    });
    const clock = app.clock as ManualClock;
    const { key } = await app.account('starter');
    const busy = await submit(app, key, { model: 'slow', prompt: 'secret prompt' });
    const waiting = await submit(app, key, { model: 'echo', prompt: 'secret prompt' });
    await eventually(() => (typesOf(busy).includes('RequestProcessingStarted') ? true : undefined));
    clock.advance(dayMs);
    await eventually(() => (typesOf(waiting).includes('RequestExpired') ? true : undefined));
    expect(typesOf(waiting)).toEqual(['RequestQueued', 'RequestExpired']);
    await eventually(() => (typesOf(busy).includes('RequestExpired') ? true : undefined));
    expect(typesOf(busy)).not.toContain('RequestCompleted');
  });

  it('after expiry and sweeping, the views still equal the fold of the log', async () => {
    app = await startTestApp();
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    for (let i = 0; i < 5; i++) await submit(app, key, { prompt: 'secret prompt' });
    await app.processor.idle();
    clock.advance(dayMs);
    await app.sweeper.sweep();
    const dataDir = app.dataDir;
    await app.stop({ keepData: true });
    expect(await dataDirViewDifferences(dataDir)).toEqual([]);
  });
});

describe('A request that expires while its model works', () => {
  let app: TestApp | undefined;
  afterEach(() => app?.stop());

  it('drops the late result with an info line, expires the request, and logs nothing at warning level or above', async () => {
    const lines: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    app = await startTestApp({
      logger,
      config: { models: [{ id: 'slow', provider: 'echo', delayMs: 300, timeoutMs: 60_000 }] },
    });
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    const response = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: 'too late' } });
    const reqId = ((await response.json()) as { request_id: string }).request_id;
    expect(syncReads(app).request(reqId)?.status).toBe('processing');
    clock.advance(dayMs);
    await app.processor.idle();
    await eventually(() => (app && syncReads(app).request(reqId)?.status === 'expired' ? true : undefined));
    expect(lines.filter((line) => line.level >= 40)).toEqual([]);
    expect(lines.map((line) => line.msg)).toContain('result dropped: the request expired before its model answered');
  });
});
