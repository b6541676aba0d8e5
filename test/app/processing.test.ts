import { describe, expect, it } from 'vitest';
import type { ModelConfig } from '../../src/config.js';
import type { StoredEvent } from '../../src/domain/events.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { eventually, startTestApp, syncReads, type TestApp, tempDataDir, testApps } from '../support/testApp.js';

const model = (id: string, delayMs: number, timeoutMs = 60_000): ModelConfig => ({
  id,
  provider: 'echo',
  delayMs,
  timeoutMs,
});
const eventsOf = (app: TestApp, reqId: string) =>
  [...syncReads(app).events()].filter((e): e is StoredEvent & { reqId: string } => 'reqId' in e && e.reqId === reqId);
const types = (app: TestApp, reqId: string) => eventsOf(app, reqId).map((e) => e.type);

const submit = async (app: TestApp, key: string, modelId: string, prompt = 'hello') => {
  const response = await app.call('POST', '/v1/ai', { key, body: { model: modelId, prompt } });
  expect(response.status).toBe(202);
  return ((await response.json()) as { request_id: string }).request_id;
};

describe('Processing', () => {
  const start = testApps();

  it('retries a failing attempt after a backoff and fails the request for good after maxAttempts', async () => {
    const app = await start({
      config: { models: [model('hang', 10_000, 20)], processing: { concurrency: 2, maxAttempts: 3 } },
    });
    const clock = app.clock as ManualClock;
    const { key } = await app.account();
    const reqId = await submit(app, key, 'hang');
    await eventually(() => (types(app, reqId).includes('RequestAttemptFailed') ? true : undefined));
    await app.processor.idle();
    // Before the backoff has passed nothing is retried.
    expect(types(app, reqId).filter((t) => t === 'RequestProcessingStarted')).toHaveLength(1);
    clock.advance(1_000);
    app.processor.wake();
    await eventually(() =>
      types(app, reqId).filter((t) => t === 'RequestAttemptFailed').length === 2 ? true : undefined,
    );
    clock.advance(2_000);
    app.processor.wake();
    await eventually(() => (types(app, reqId).includes('RequestFailed') ? true : undefined));
    expect(types(app, reqId)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestAttemptFailed',
      'RequestProcessingStarted',
      'RequestAttemptFailed',
      'RequestProcessingStarted',
      'RequestFailed',
    ]);
    const failed = eventsOf(app, reqId).at(-1) as { reason: string };
    expect(failed.reason).toBe('gave up after 3 attempts: timed out after 20 ms');
    const polled = await app.call('GET', `/v1/ai?req_id=${reqId}`, { key });
    expect(polled.status).toBe(500);
    const body = (await polled.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('server_error');
    expect(body.error.message).not.toContain('timed out');
  });

  it('does not let a hanging model hold a worker: with one worker, the next request completes after the timeout', async () => {
    const app = await start({
      config: { models: [model('hang', 10_000, 30), model('echo', 0)], processing: { concurrency: 1, maxAttempts: 1 } },
    });
    const { key } = await app.account('starter');
    const hung = await submit(app, key, 'hang');
    const quick = await submit(app, key, 'echo');
    await eventually(() => (types(app, quick).includes('RequestCompleted') ? true : undefined));
    expect(types(app, hung)).toContain('RequestFailed');
  });

  it('after a restart, continues requests that were queued or being processed when the process stopped (a clean stop gives the one being processed back at once)', async () => {
    const dataDir = tempDataDir();
    const first = await startTestApp({
      dataDir,
      config: { models: [model('m', 60_000)], processing: { concurrency: 1, maxAttempts: 3 } },
    });
    const { key } = await first.account('starter');
    const processing = await submit(first, key, 'm', 'first');
    const waiting = await submit(first, key, 'm', 'second');
    await eventually(() => (types(first, processing).includes('RequestProcessingStarted') ? true : undefined));
    await first.stop({ keepData: true });

    const second = await start({
      dataDir,
      clock: first.clock,
      config: { models: [model('m', 0)], processing: { concurrency: 1, maxAttempts: 3 } },
    });
    await eventually(() => (types(second, waiting).includes('RequestCompleted') ? true : undefined));
    expect(types(second, processing)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestReleased',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
    for (const [reqId, prompt] of [
      [processing, 'first'],
      [waiting, 'second'],
    ] as const) {
      const polled = await second.call('GET', `/v1/ai?req_id=${reqId}`, { key });
      expect(await polled.json()).toMatchObject({ status: 'completed', response: prompt });
    }
  });

  it('takes queued requests in the order they were submitted', async () => {
    const app = await start({ config: { models: [model('echo', 0)], processing: { concurrency: 1, maxAttempts: 1 } } });
    const { key } = await app.account('starter');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push(await submit(app, key, 'echo', `p${i}`));
      (app.clock as ManualClock).advance(1);
    }
    await app.processor.idle();
    const completedOrder = [...syncReads(app).events()]
      .filter((e) => e.type === 'RequestCompleted')
      .map((e) => (e as { reqId: string }).reqId);
    expect(completedOrder).toEqual(ids);
  });
});
