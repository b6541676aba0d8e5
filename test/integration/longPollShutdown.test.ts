import { afterEach, describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, type ServerProcess, startServer, submit } from '../support/processes.js';

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});

/**
 * `airs serve` stopping on SIGTERM (through the CLI) answers a held long poll at once with what it has, so that the
 * drain is not held up by a poll that asked to wait a minute.
 */
describe('A long poll when the server stops', { timeout: 60_000 }, () => {
  it('is answered at once with the current state, Connection: close and no Preference-Applied on SIGTERM', async () => {
    const box = newBox('airs-longpoll-sigterm');
    box.writeConfig({
      models: [{ id: 'slow', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 }],
      shutdownDelaySeconds: 5,
      shutdownGraceSeconds: 1,
    });
    const server = await startServer(box);
    started.push(server);
    const { key } = await createAccountWithKey(box, 'sigterm@example.com');
    const { body } = await submit(server.url, key, 'slow', 'never answered in time');
    const reqId = (body as { request_id: string }).request_id;
    const polled = fetch(`${server.url}/v1/ai?req_id=${reqId}`, {
      headers: { authorization: `Bearer ${key}`, prefer: 'wait=60' },
    });
    // Held: nothing comes back for a while.
    const early = await Promise.race([polled.then(() => 'answered'), new Promise((r) => setTimeout(r, 1_000, 'held'))]);
    expect(early).toBe('held');

    const signalledAt = Date.now();
    const exited = server.stop('SIGTERM');
    const answer = await polled;
    const answeredMs = Date.now() - signalledAt;

    expect(answer.status).toBe(200);
    expect(((await answer.json()) as { status: string }).status).toBe('queued');
    expect(answer.headers.get('preference-applied')).toBeNull();
    expect(answer.headers.get('connection')).toBe('close');
    // At once, not after the 60 s asked (nor after the 5 s of the stop’s delay).
    expect(answeredMs).toBeLessThan(4_000);
    expect(await exited).not.toBeNull();
  });
});
