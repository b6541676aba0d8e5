import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config.js';
import { defaultPlans } from '../../src/domain/plans.js';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, listen, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * How long a connection may take and how many a server holds (`http.*` in the config), on real sockets: short limits
 * here so that each case takes a few seconds. The bounds asserted on timing are loose (a loaded 2-core machine);
 * the times measured are printed.
 */

const limits: Config['http'] = {
  headersTimeoutSeconds: 1,
  requestTimeoutSeconds: 2,
  keepAliveTimeoutSeconds: 1,
  maxConnections: 40,
  maxLongCallsShare: 0.5,
  maxPollWaitSeconds: 60,
};
/** Generous: Node looks for expired connections once a second, and the machine may be busy. */
const slackMs = 6_000;

let app: TestApp | undefined;
let server: Awaited<ReturnType<typeof listen>> | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await server?.close();
  await app?.stop();
});

const start = async (http: Config['http'] = limits) => {
  app = await startTestApp({
    clock: systemClock,
    config: {
      http,
      models: [{ id: 'slow', provider: 'echo', delayMs: 3_000, timeoutMs: 60_000 }],
      plans: { ...defaultPlans, free: { ...defaultPlans.free, submitsPerMinute: 1_000 } },
    },
  });
  server = await listen(app);
  return { url: server.url, ...(await app.account()) };
};

/**
 * A raw connection, as an attacker holds it: it never closes its own side (`allowHalfOpen`), so only the server can
 * end it. What it received, and when the server stopped talking to it (ms after it was opened).
 */
type Watched = { readonly socket: Socket; received(): string; ended: Promise<number> };

const open = (url: string, first?: string): Promise<Watched> =>
  new Promise((resolve, reject) => {
    const { hostname, port } = new URL(url);
    const startedAt = performance.now();
    let received = '';
    const socket = connect({ port: Number(port), host: hostname, allowHalfOpen: true });
    sockets.push(socket);
    const ended = new Promise<number>((done) => {
      const at = () => done(performance.now() - startedAt);
      socket.once('end', at).once('close', at);
    });
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('error', () => {});
    socket.once('connect', () => {
      if (first !== undefined) socket.write(first);
      resolve({ socket, received: () => received, ended });
    });
    socket.once('error', reject);
  });

const within = <T>(promise: Promise<T>, ms: number, what: string) =>
  Promise.race([
    promise,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)),
  ]);

/** Resolves with the time it took once the server holds no connection at all (a half-open one counts as held). */
const serverHoldsNone = async (startedAt: number, ms: number) => {
  const deadline = performance.now() + ms;
  while ((await (server as NonNullable<typeof server>).connections()) > 0) {
    if (performance.now() > deadline) throw new Error(`the server still holds connections after ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return performance.now() - startedAt;
};

const bodyOf = (answer: string) => JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as unknown;

describe('Connection limits of the HTTP server', { timeout: 30_000 }, () => {
  it('answers 408 in the contract’s shape and lets go of connections that have not sent their headers in headersTimeoutSeconds, silent ones too', async () => {
    const { url } = await start();
    const startedAt = performance.now();
    const halfSent = await Promise.all(
      Array.from({ length: 30 }, () => open(url, 'POST /v1/ai HTTP/1.1\r\nHost: x\r\nContent-Type: applic')),
    );
    const silent = await open(url);
    await eventually(async () => ((await server?.connections()) === 31 ? true : undefined));
    const heldFor = await serverHoldsNone(startedAt, 1_000 + slackMs);
    console.log(`half-sent headers: all let go after ${Math.round(heldFor)} ms (headersTimeout 1 s)`);
    expect(Math.min(...(await Promise.all([...halfSent, silent].map((c) => c.ended))))).toBeGreaterThanOrEqual(900);
    for (const connection of halfSent) {
      expect(connection.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(bodyOf(connection.received())).toEqual({
        error: {
          code: 'invalid_request',
          message: 'the request did not arrive in time; send its headers and body promptly',
        },
      });
    }
  });

  it('lets go of a connection whose body trickles in slower than requestTimeoutSeconds allows, with a 408', async () => {
    const { url, key } = await start();
    const body = JSON.stringify({ model: 'slow', prompt: 'x'.repeat(200) });
    const startedAt = performance.now();
    const slow = await open(
      url,
      `POST /v1/ai HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    let sent = 0;
    const trickle = setInterval(() => {
      if (!slow.socket.destroyed && sent < body.length) slow.socket.write(body[sent++] as string);
    }, 100);
    try {
      const heldFor = await serverHoldsNone(startedAt, 2_000 + slackMs);
      console.log(`trickled body: let go after ${Math.round(heldFor)} ms (requestTimeout 2 s)`);
      expect(heldFor).toBeGreaterThanOrEqual(1_900);
      expect(sent).toBeLessThan(body.length);
      expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    } finally {
      clearInterval(trickle);
    }
  });

  it('lets go of an idle kept-alive connection after keepAliveTimeoutSeconds (and the second Node adds)', async () => {
    const { url, key } = await start();
    const startedAt = performance.now();
    const connection = await open(
      url,
      `GET /v1/ai?req_id=req_x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${key}\r\n\r\n`,
    );
    const heldFor = await serverHoldsNone(startedAt, 2_000 + slackMs);
    console.log(`idle kept-alive connection: let go after ${Math.round(heldFor)} ms (keepAliveTimeout 1 s)`);
    expect(connection.received()).toMatch(/^HTTP\/1\.1 404 /);
    expect(heldFor).toBeGreaterThanOrEqual(900);
  });

  it('lets an answer take longer than the request timeouts: a waiting create of 3 s is answered', async () => {
    const { url, key } = await start();
    const response = await fetch(`${url}/v1/responses`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'slow', input: 'worth the wait' }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ status: 'completed' });
  });

  it('holds at most maxConnections at once: one more is closed at once unanswered, and calls are served again once the held ones time out', async () => {
    // Headers get 5 s here: the connection over the cap must come while the others are surely still held.
    const http = { ...limits, headersTimeoutSeconds: 5, requestTimeoutSeconds: 5 };
    const { url, key } = await start(http);
    const startedAt = performance.now();
    await Promise.all(Array.from({ length: limits.maxConnections }, () => open(url, 'GET / HTTP/1.1\r\n')));
    const extra = await open(url, 'GET /v1/ai HTTP/1.1\r\nHost: x\r\n\r\n');
    const extraEndedAfter = await within(extra.ended, 4_000, 'the connection over the cap closed');
    expect(extra.received()).toBe('');
    expect(await server?.connections()).toBeLessThanOrEqual(limits.maxConnections);
    console.log(`connection over maxConnections: closed after ${Math.round(extraEndedAfter)} ms`);
    await serverHoldsNone(startedAt, 5_000 + slackMs);
    const answer = await fetch(`${url}/v1/ai?req_id=req_x`, { headers: { authorization: `Bearer ${key}` } });
    expect(answer.status).toBe(404);
  });
});
