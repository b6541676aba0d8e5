import { afterAll, describe, expect, it } from 'vitest';
import { unusedPort } from '../support/ports.js';
import { createAccountWithKey, killChildren, poll, sandbox, sleep, startServer, submit } from '../support/processes.js';

describe('A request whose upstream is down, on a server that receives nothing else', () => {
  const boxes: ReturnType<typeof sandbox>[] = [];
  afterAll(async () => {
    await killChildren();
    for (const box of boxes) box.remove();
  });

  it('is retried after its backoff and fails for good by itself, without another submit to wake the server', async () => {
    const box = sandbox('airs-quiet-retry');
    boxes.push(box);
    box.writeConfig({
      models: [
        {
          id: 'down',
          provider: 'openai',
          baseUrl: `http://127.0.0.1:${await unusedPort()}/v1`,
          upstreamModel: 'nothing',
          timeoutMs: 500,
          maxRetries: 0,
        },
      ],
      processing: { maxAttempts: 2 },
    });
    const { key } = await createAccountWithKey(box, 'quiet@example.com');
    const server = await startServer(box);
    const submitted = await submit(server.url, key, 'down', 'is anybody there?');
    expect(submitted.status).toBe(202);
    const reqId = (submitted.body as { request_id: string }).request_id;

    // Attempt 1 fails at once, attempt 2 follows its 1 s backoff and fails too: the request then answers 500 (failed
    // for good). Nothing else is sent to the server meanwhile; polls read, they wake nothing.
    let answer = await poll(server.url, key, reqId);
    for (let waited = 0; answer.status === 200 && waited < 20_000; waited += 250) {
      await sleep(250);
      answer = await poll(server.url, key, reqId);
    }
    expect(answer.status).toBe(500);
    expect(answer.body).toMatchObject({ error: { code: 'server_error', details: { final: true } } });
  }, 60_000);
});
