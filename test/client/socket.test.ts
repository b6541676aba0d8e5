import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AirsError, createClient, type PollInfo } from '../../src/client/index.js';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';

/** The client with the platform `fetch` against the real service on a socket of 127.0.0.1. */

describe('the client over a real socket', { timeout: 30_000 }, () => {
  let app: TestApp;
  let server: { url: string; close(): Promise<void> | void };
  let key: string;
  beforeAll(async () => {
    app = await startTestApp();
    server = await listen(app);
    ({ key } = await app.account());
  });
  afterAll(async () => {
    await server.close();
    await app.stop();
  });

  it('runs a prompt through submit and polling and returns the completed poll body', async () => {
    const client = createClient({ baseUrl: `${server.url}/`, apiKey: key, sleep: () => app.processor.idle() });
    const polls: PollInfo[] = [];

    const done = await client.run('echo', 'over the wire', { onPoll: (info) => polls.push(info), timeoutMs: 20_000 });

    expect(done).toMatchObject({ status: 'completed', model: 'echo', response: 'over the wire' });
    expect(done.req_id).toMatch(/^req_/);
    expect(polls.at(-1)?.body.status).toBe('completed');
  });

  it('surfaces a wrong key as an AirsError 401 with the service’s message', async () => {
    const client = createClient({ baseUrl: server.url, apiKey: 'sk_wrong' });

    const failure = await client.submit('echo', 'hi').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 401, code: 'unauthorized' });
    expect((failure as AirsError).message.length).toBeGreaterThan(0);
  });

  it('aborts a call in flight when the signal aborts', async () => {
    const client = createClient({ baseUrl: server.url, apiKey: key });
    const controller = new AbortController();
    const reason = new Error('stop');
    const pending = client.submit('echo', 'hi', { signal: controller.signal });
    controller.abort(reason);

    await expect(pending).rejects.toBe(reason);
  });
});
