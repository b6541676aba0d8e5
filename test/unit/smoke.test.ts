import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/testApp.js';

describe('smoke', () => {
  let app: TestApp;
  afterEach(() => app?.stop());
  it('a submitted echo request completes with the prompt as its response', async () => {
    app = await startTestApp();
    const { key } = await app.account();
    const posted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } });
    expect(posted.status).toBe(202);
    const { request_id } = (await posted.json()) as { request_id: string };
    await app.processor.idle();
    const polled = await app.call('GET', `/v1/ai?req_id=${request_id}`, { key });
    expect(await polled.json()).toMatchObject({
      req_id: request_id,
      status: 'completed',
      model: 'echo',
      response: 'hi',
    });
  });
});
