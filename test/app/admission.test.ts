import { afterEach, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Admission through the app: one worker, busy with a model call of 1.5 s, and `processing.maxBacklog` 3. The first
 * submit starts at once; three more queue; the fifth is refused with `503`, `Retry-After: 1` and the contract's error
 * shape; once the worker takes a request from the queue, one more is taken, and the next refused again.
 */
describe('Admission: submits that must queue are refused once the backlog passes its bound', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
  });

  it('answers 503 with Retry-After beyond processing.maxBacklog, and takes submits again as the workers take the queue', async () => {
    app = await startTestApp({
      clock: systemClock,
      config: {
        models: [{ id: 'held', provider: 'echo', delayMs: 1_500, timeoutMs: 60_000 }],
        processing: { concurrency: 1, maxBacklog: 3 },
      },
    });
    const running = app;
    const { key } = await running.account('enterprise');
    const post = async (i: number) => {
      const response = await running.call('POST', '/v1/ai', { key, body: { model: 'held', prompt: `p${i}` } });
      return { status: response.status, headers: response.headers, body: (await response.json()) as never };
    };
    // One by one: the first takes the only worker, the next three wait in the queue.
    for (let i = 0; i < 4; i++) expect((await post(i)).status).toBe(202);
    const refused = await post(4);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('1');
    expect(refused.body).toMatchObject({ error: { code: 'server_error' } });
    // Refused before the body is read and the rate limit spent: a body that would be a 400 gets the 503 too, and no
    // RateLimit header (nothing was spent).
    const early = await running.call('POST', '/v1/ai', { key, body: { model: 'held' } });
    expect(early.status).toBe(503);
    expect(early.headers.get('ratelimit-policy')).toBeNull();
    // The first call ends; the worker takes the next request from the queue: one place more, and only one.
    let i = 5;
    await eventually(async () => ((await post(i++)).status === 202 ? true : undefined), 10_000);
    expect((await post(i++)).status).toBe(503);
  });
});
