import { afterAll, describe, expect, it } from 'vitest';
import { type ServerProcess, sleep, stderrShowing } from '../support/processes.js';
import {
  expectEveryAcknowledgedCompletedOnce,
  type Nodes,
  startNodes,
  untilListening,
  untilReady,
  useTestCluster,
} from './postgresFaults.js';

// Issue 22: a node that loses its PostgreSQL database (stopped cleanly here; killed in postgresCrash.test.ts) answers
// 503 with Retry-After, says it is not ready, comes back by itself, and loses nothing it acknowledged.
useTestCluster();

const post = (url: string, path: string, key: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** A dashboard session made through the signup form, as a browser does: its cookie. */
const signedUp = async (url: string, email: string) => {
  const page = await fetch(`${url}/dashboard/signup`);
  const anonymous = (page.headers.getSetCookie()[0] ?? '').split(';')[0] as string;
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const answer = await fetch(`${url}/dashboard/signup`, {
    method: 'POST',
    redirect: 'manual',
    headers: { cookie: anonymous, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password: 'a long enough password 1', csrf }).toString(),
  });
  expect(answer.status).toBe(303);
  return (answer.headers.getSetCookie().find((cookie) => cookie.startsWith('airs_session=')) ?? '').split(';')[0] ?? '';
};

/** Every call of the list that needs the database, answered while it is away: each must be a 503 with Retry-After. */
const callsNeedingTheDatabase = (node: string, key: string, reqId: string, session: string) => [
  { name: 'POST /v1/ai', call: () => post(node, '/v1/ai', key, { model: 'llm', prompt: 'during the outage' }) },
  {
    name: 'POST /v1/ai with an Idempotency-Key',
    call: () => post(node, '/v1/ai', key, { model: 'llm', prompt: 'once' }, { 'idempotency-key': 'outage-1' }),
  },
  {
    name: 'GET /v1/ai',
    call: () => fetch(`${node}/v1/ai?req_id=${reqId}`, { headers: { authorization: `Bearer ${key}` } }),
  },
  { name: 'POST /v1/responses', call: () => post(node, '/v1/responses', key, { model: 'llm', input: 'hello' }) },
  {
    name: 'POST /v1/chat/completions',
    call: () => post(node, '/v1/chat/completions', key, { model: 'llm', messages: [{ role: 'user', content: 'hi' }] }),
  },
  {
    name: 'GET /v1/responses/{id}',
    call: () => fetch(`${node}/v1/responses/${reqId}`, { headers: { authorization: `Bearer ${key}` } }),
  },
  { name: 'GET /v1/models', call: () => fetch(`${node}/v1/models`, { headers: { authorization: `Bearer ${key}` } }) },
  { name: 'GET /dashboard', call: () => fetch(`${node}/dashboard`, { headers: { cookie: session } }) },
  {
    name: 'GET /dashboard/requests',
    call: () => fetch(`${node}/dashboard/requests`, { headers: { cookie: session } }),
  },
];

describe('a node on PostgreSQL that loses its database', { timeout: 60_000 }, () => {
  let nodes: Nodes;
  afterAll(() => nodes?.dispose());

  it('answers 503 with Retry-After on every call that needs the database, says not ready, and comes back by itself with every acknowledged request completed once', async () => {
    nodes = await startNodes(2);
    const [a, b] = nodes.servers.map((server) => server.url) as [string, string];
    const session = await signedUp(a, 'owner@example.com');
    expect((await fetch(`${a}/dashboard`, { headers: { cookie: session } })).status).toBe(200);
    // Acknowledged before the outage, still running or queued when the database goes: slow answers.
    nodes.upstream.setDelay((prompt) => (prompt.startsWith('before') ? 1_500 : 0));
    const acknowledged: string[] = [];
    for (let i = 0; i < 12; i++) {
      const answer = await post(i % 2 === 0 ? a : b, '/v1/ai', nodes.key, { model: 'llm', prompt: `before ${i}` });
      expect(answer.status).toBe(202);
      acknowledged.push(((await answer.json()) as { request_id: string }).request_id);
    }
    const someId = acknowledged[0] as string;

    nodes.postgres.stopServer();
    const stoppedAt = Date.now();
    try {
      // Not ready on both nodes within a few seconds (the health check asks every second), /healthz still 200.
      for (const node of [a, b]) {
        let ready = await fetch(`${node}/readyz`);
        while (ready.status === 200 && Date.now() - stoppedAt < 5_000) {
          await sleep(50);
          ready = await fetch(`${node}/readyz`);
        }
        expect(ready.status).toBe(503);
        expect(ready.headers.get('retry-after')).toMatch(/^\d+$/);
        expect(((await ready.json()) as { error: { message: string } }).error.message).toMatch(
          /not ready: the database cannot be reached/,
        );
        expect((await fetch(`${node}/healthz`)).status).toBe(200);
      }
      for (const node of [a, b])
        for (const { name, call } of callsNeedingTheDatabase(node, nodes.key, someId, session)) {
          const answer = await call();
          expect(answer.status, `${name} on ${node}`).toBe(503);
          expect(answer.headers.get('retry-after'), `${name}: Retry-After`).toMatch(/^\d+$/);
          if (name.startsWith('GET /dashboard')) {
            expect(answer.headers.get('content-type')).toMatch(/text\/html/);
            expect(await answer.text()).toMatch(/Try again in a few seconds/);
          } else {
            const body = (await answer.json()) as { error: { code: string; message: string; type?: string } };
            expect(body.error.code, name).toBe('server_error');
            expect(body.error.message).toMatch(/cannot reach its database/);
            if (name.includes('responses') || name.includes('chat') || name.includes('models'))
              expect(body.error.type).toBe('server_error');
          }
        }
      // Said once in the log, as a fault of the database, not per call.
      const log = await stderrShowing(nodes.servers[0] as ServerProcess, /the database cannot be reached/);
      expect(log).toMatch(/the database cannot be reached: calls that need it answer 503/);
      expect(log).not.toMatch(/"msg":"request failed"/);
    } finally {
      nodes.postgres.startServer();
    }
    const readyAfterMs = await untilReady(nodes);
    console.info(`after a clean stop: both nodes ready ${readyAfterMs} ms after pg_ctl start returned`);
    expect(await untilListening(nodes)).toBe(2);
    // Works again, on both nodes, without a restart.
    for (const node of [a, b]) {
      const answer = await post(node, '/v1/ai', nodes.key, { model: 'llm', prompt: `after ${node}` });
      expect(answer.status).toBe(202);
      acknowledged.push(((await answer.json()) as { request_id: string }).request_id);
    }
    expect((await fetch(`${a}/dashboard`, { headers: { cookie: session } })).status).toBe(200);
    await expectEveryAcknowledgedCompletedOnce(nodes, acknowledged);
    expect(await stderrShowing(nodes.servers[0] as ServerProcess, /the database can be reached again/)).toMatch(
      /the database can be reached again/,
    );
  });
});
