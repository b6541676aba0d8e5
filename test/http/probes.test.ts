import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/testApp.js';

describe('Probes for an orchestrator', () => {
  let app: TestApp;
  afterEach(() => app.stop());

  it('answer without a key: /healthz 200, /readyz 200 while the service takes work', async () => {
    app = await startTestApp();
    const health = await app.call('GET', '/healthz');
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await app.call('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
    expect(ready.headers.get('ratelimit')).toBeNull();
  });

  it('/readyz answers 503 with Retry-After once the server stops taking work, while /healthz stays 200', async () => {
    app = await startTestApp();
    app.stopAccepting();
    const ready = await app.call('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(await ready.json()).toEqual({
      error: { code: 'server_error', message: 'not ready: the server is stopping' },
    });
    expect((await app.call('GET', '/healthz')).status).toBe(200);
  });

  it('/readyz answers 503 while the data directory’s disk is under its free-space floor', async () => {
    app = await startTestApp({
      config: { storage: { minFreeBytes: 64 * 1024 * 1024 } },
      readFreeBytes: async () => 1024 * 1024,
    });
    const ready = await app.call('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { error: { message: string } }).error.message).toMatch(/free-space floor/);
  });
});
