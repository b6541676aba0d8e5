import { describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, poll, sleep, startServer, submit } from '../support/processes.js';

const newBox = fileSandboxes();

type Seen = { statuses: number[]; networkErrors: string[]; acknowledged: string[] };

/**
 * One client of many: submits and polls on its keep-alive connection without a pause until the server answers 503
 * (what a client retries, later or elsewhere), or for at most 15 s.
 */
const client = async (url: string, key: string, seen: Seen) => {
  const until = Date.now() + 15_000;
  let last: string | undefined;
  while (Date.now() < until) {
    try {
      const answer =
        last === undefined || Math.random() < 0.5
          ? await submit(url, key, 'slow', 'drain me')
          : await poll(url, key, last);
      seen.statuses.push(answer.status);
      if (answer.status === 202) {
        last = answer.body.request_id as string;
        seen.acknowledged.push(last);
      }
      if (answer.status === 503) {
        expect(answer.headers.get('retry-after')).toBe('5');
        expect(answer.headers.get('connection')).toBe('close');
        return;
      }
    } catch (error) {
      seen.networkErrors.push(String((error as Error & { cause?: Error }).cause ?? error));
      return;
    }
  }
};

describe('Stopping under load (SIGTERM)', { timeout: 90_000 }, () => {
  it('answers every call (202, 200 or 503, never a reset or a refused connection), finishes the model work in flight, exits 0, and loses nothing acknowledged', async () => {
    const box = newBox('airs-drain');
    box.writeConfig({ models: [{ id: 'slow', provider: 'echo', delayMs: 1_500 }], shutdownGraceSeconds: 10 });
    const { key } = await createAccountWithKey(box, 'drain@example.com', 'enterprise');
    const server = await startServer(box);
    const seen: Seen = { statuses: [], networkErrors: [], acknowledged: [] };

    const clients = Array.from({ length: 24 }, () => client(server.url, key, seen));
    // Stop once calls of both kinds were answered, however fast this machine is today (at least 700 ms; bounded).
    const loadedBy = Date.now() + 20_000;
    await sleep(700);
    while (!(seen.statuses.includes(200) && seen.statuses.includes(202)) && Date.now() < loadedBy) await sleep(50);
    const exited = server.stop('SIGTERM');
    await Promise.all(clients);
    // A client that comes only now, on a new connection, is answered too: the port stays open while draining.
    const late = await submit(server.url, key, 'slow', 'too late');
    expect(late.status).toBe(503);
    // Probes say so too: not ready while stopping, still alive.
    expect((await fetch(`${server.url}/readyz`)).status).toBe(503);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);

    expect(seen.networkErrors).toEqual([]);
    expect(new Set(seen.statuses)).toEqual(new Set([202, 200, 503]));
    expect(seen.statuses.filter((status) => status === 503)).toHaveLength(24);
    expect(await exited).toBe(0);
    // The model calls in flight (1.5 s each, within the 10 s grace) finished before the exit.
    expect(server.stderr()).not.toMatch(/grace period over/);

    box.writeConfig({ models: [{ id: 'slow', provider: 'echo', delayMs: 0 }] });
    const next = await startServer(box);
    expect(seen.acknowledged.length).toBeGreaterThan(24);
    for (const reqId of seen.acknowledged) {
      const deadline = Date.now() + 15_000;
      for (;;) {
        const answer = await poll(next.url, key, reqId);
        expect(answer.status).toBe(200);
        if (answer.body.status === 'completed') break;
        if (Date.now() > deadline) throw new Error(`${reqId} did not complete after the restart`);
        await sleep(100);
      }
    }
    expect(await next.stop('SIGTERM')).toBe(0);
  });
});
