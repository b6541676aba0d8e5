import { afterEach, describe, expect, it } from 'vitest';
import {
  createAccountWithKey,
  fileSandboxes,
  type ServerProcess,
  servingPids,
  sleep,
  startServer,
} from '../support/processes.js';

const newBox = fileSandboxes();
const started: ServerProcess[] = [];
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop('SIGKILL');
});

/**
 * Long polls across the processes of `airs serve --processes 2`, started through the CLI: one process runs the
 * request, and polls held by either process answer once it completes: the process that did not run it hears of the
 * outcome through the shared store's change notifications (or, should one be lost, its waits' one-second look).
 */
describe('Long polls across server processes', { timeout: 90_000 }, () => {
  it('are answered completed by every process once the one running the request completes it', async () => {
    const box = newBox('airs-longpoll-processes');
    // `soon` answers after 2 s, long after every poll below arrived; a 30 s wait is far beyond it.
    box.writeConfig({ models: [{ id: 'soon', provider: 'echo', delayMs: 2_000 }] });
    const server = await startServer(box, {
      args: ['--processes', '2'],
      env: { LOG_LEVEL: 'debug' },
      timeoutMs: 40_000,
    });
    started.push(server);
    const { key } = await createAccountWithKey(box, 'longpoll@example.com');
    const submitted = await fetch(`${server.url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ model: 'soon', prompt: 'across processes' }),
    });
    expect(submitted.status).toBe(202);
    const { request_id } = (await submitted.json()) as { request_id: string };
    const startedAt = Date.now();

    // Each poll on a connection of its own: the primary hands connections to the processes in turn.
    const polls = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        await sleep(i * 20);
        const answer = await fetch(`${server.url}/v1/ai?req_id=${request_id}`, {
          headers: { authorization: `Bearer ${key}`, prefer: 'wait=30', connection: 'close' },
        });
        const body = (await answer.json()) as { status: string; response?: string };
        return { status: answer.status, applied: answer.headers.get('preference-applied'), body };
      }),
    );
    const tookMs = Date.now() - startedAt;

    for (const poll of polls) {
      expect(poll).toEqual({
        status: 200,
        applied: 'wait=30',
        body: expect.objectContaining({ status: 'completed', response: 'across processes' }),
      });
    }
    // Held until the answer (2 s), not for the 30 s asked.
    expect(tookMs).toBeGreaterThanOrEqual(1_000);
    expect(tookMs).toBeLessThan(20_000);
    // Both processes held polls; only one of them ran the request.
    for (let i = 0; i < 50 && servingPids(server, '/v1/ai', 'GET').size < 2; i++) await sleep(100);
    expect(servingPids(server, '/v1/ai', 'GET').size).toBe(2);
  });
});
