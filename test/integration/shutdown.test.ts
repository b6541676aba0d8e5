import { afterEach, describe, expect, it } from 'vitest';
import { createAccountWithKey, killChildren, poll, sandbox, startServer, submit } from '../support/processes.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

describe('Stopping the server', () => {
  let app: TestApp | undefined;
  afterEach(async () => {
    await app?.stop();
    app = undefined;
    await killChildren();
  });

  it('answers every call with 503 server_error and Retry-After while it drains', async () => {
    app = await startTestApp();
    const { key } = await app.account();
    app.stopAccepting();
    const response = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'late' } });
    expect(response.status).toBe(503);
    expect(response.headers.get('retry-after')).toBe('5');
    expect(response.headers.get('connection')).toBe('close');
    expect(await response.json()).toMatchObject({ error: { code: 'server_error' } });
  });

  it('exits 0 on SIGTERM with work in flight, and the next start completes that work', async () => {
    const box = sandbox('airs-sigterm');
    try {
      // A grace period shorter than the model call: the stop cuts it short, the next start takes it up again.
      box.writeConfig({ models: [{ id: 'm', provider: 'echo', delayMs: 30_000 }], shutdownGraceSeconds: 1 });
      const { key } = await createAccountWithKey(box, 'stop@example.com');
      const first = await startServer(box);
      const accepted = await submit(first.url, key, 'm', 'survive a stop');
      expect(accepted.status).toBe(202);
      const reqId = (accepted.body as { request_id: string }).request_id;
      expect(await first.stop('SIGTERM')).toBe(0);

      box.writeConfig({ models: [{ id: 'm', provider: 'echo', delayMs: 0 }] });
      const second = await startServer(box);
      const done = await eventually(async () => {
        const answer = await poll(second.url, key, reqId);
        return (answer.body as { status?: string }).status === 'completed' ? answer.body : undefined;
      }, 15_000);
      expect(done).toMatchObject({ response: 'survive a stop' });
    } finally {
      await killChildren();
      box.remove();
    }
  }, 60_000);
});
