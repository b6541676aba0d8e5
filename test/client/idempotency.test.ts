import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { newIdempotencyKey } from '../../src/client/idempotency.js';
import {
  AirsError,
  AirsIdempotencyError,
  type ClientOptions,
  createClient,
  type RetryInfo,
} from '../../src/client/index.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { listen, loggedEvents, type TestApp } from '../support/testApp.js';
import { startClientApp } from './inProcessApp.js';
import { recordingSleep, scriptedServer } from './support.js';

/**
 * `Idempotency-Key` on submits: the client against the real service (in-process app on a socket of 127.0.0.1)
 * behind a proxy on 127.0.0.1 that can lose a call on the way in or its answer on the way back.
 */

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

/** What the proxy does with one call: pass it on, cut the connection before passing it on, or after. */
type Action = 'forward' | 'lose-call' | 'lose-answer';

type Seen = {
  readonly method: string;
  readonly url: string;
  readonly idempotencyKey: string | undefined;
  /** What the service answered (absent when the call never reached it). */
  status?: number;
  replayed?: string | null;
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

const bodyOf = async (request: IncomingMessage) => {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
};

/** A proxy in front of `upstream`; `plan` decides each call's fate (`index` counts calls from 1). */
const startProxy = async (upstream: string, plan: (seen: Seen, index: number) => Action) => {
  const seen: Seen[] = [];
  const server = createServer((request, response) => {
    void (async () => {
      const body = await bodyOf(request);
      const header = request.headers['idempotency-key'];
      const entry: Seen = {
        method: request.method ?? '',
        url: request.url ?? '',
        idempotencyKey: Array.isArray(header) ? header.join(',') : header,
      };
      seen.push(entry);
      const action = plan(entry, seen.length);
      if (action === 'lose-call') {
        request.socket.destroy();
        return;
      }
      const headers: Record<string, string> = {};
      for (const name of ['authorization', 'content-type', 'accept', 'idempotency-key']) {
        const value = request.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      const answer = await fetch(`${upstream}${entry.url}`, {
        method: entry.method,
        headers,
        body: entry.method === 'GET' ? undefined : body,
      });
      const text = await answer.text();
      entry.status = answer.status;
      entry.replayed = answer.headers.get('idempotent-replayed');
      // The service has answered (a submit is durable by now); the client never hears of it.
      if (action === 'lose-answer') {
        request.socket.destroy();
        return;
      }
      const passed: Record<string, string> = {};
      for (const name of ['content-type', 'retry-after', 'idempotent-replayed']) {
        const value = answer.headers.get(name);
        if (value !== null) passed[name] = value;
      }
      response.writeHead(answer.status, passed);
      response.end(text);
    })().catch(() => request.socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${port}`, seen };
};

/** The real app on a socket, a proxy before it, and a client of one new account through the proxy. */
const setUp = async (plan: (seen: Seen, index: number) => Action, options: Partial<ClientOptions> = {}) => {
  const app = await startClientApp();
  const served = await listen(app);
  closers.push(async () => {
    await served.close();
  });
  const proxy = await startProxy(served.url, plan);
  const { accountId, key } = await app.account();
  const time = recordingSleep(app.clock as ManualClock);
  const retries: RetryInfo[] = [];
  const client = createClient({
    baseUrl: proxy.url,
    apiKey: key,
    sleep: time.sleep,
    now: () => app.clock.now(),
    firstPollDelayMs: 0,
    onRetry: (info) => retries.push(info),
    ...options,
  });
  return { app, accountId, client, proxy, retries, delays: time.delays };
};

/** The requests the account has, from the store, and the `RequestQueued` events of the account in the log. */
const requestsOfAccount = async (app: TestApp, accountId: string) => {
  const requests = (await app.store.reads.requestsOf(accountId, { limit: 100 })).map((state) => state.context.reqId);
  const queuedEvents = (await loggedEvents(app)).filter(
    (event) => event.type === 'RequestQueued' && 'accountId' in event && event.accountId === accountId,
  );
  return { requests, queuedEvents: queuedEvents.length };
};

const posts = (seen: readonly Seen[]) => seen.filter((call) => call.method === 'POST');

/** Loses the first `count` POSTs (by default their answers, after the service answered); passes the rest on. */
const losingPosts = (count: number, action: Action = 'lose-answer') => {
  let postsSeen = 0;
  return (call: Seen): Action => {
    if (call.method !== 'POST') return 'forward';
    postsSeen += 1;
    return postsSeen <= count ? action : 'forward';
  };
};

describe('the client’s Idempotency-Key on submits', { timeout: 30_000 }, () => {
  it('sends one new key with each submit: a UUID, different for different submits', async () => {
    const { client, proxy } = await setUp(() => 'forward');

    const first = await client.submit('echo', 'one');
    const second = await client.submit('echo', 'one');

    const [a, b] = posts(proxy.seen).map((call) => call.idempotencyKey);
    expect(a).toMatch(uuid);
    expect(b).toMatch(uuid);
    expect(a).not.toBe(b);
    // Two submits of the same prompt are two requests: the key is per submit, not per body.
    expect(first.request_id).not.toBe(second.request_id);
  });

  it('retries a submit whose answer was lost after the service made the request, with the same key, and exactly one request exists', async () => {
    const { app, accountId, client, proxy, retries, delays } = await setUp(losingPosts(1));

    const submitted = await client.submit('echo', 'lost on the way back');

    const attempts = posts(proxy.seen);
    expect(attempts).toHaveLength(2);
    expect(attempts[0]?.idempotencyKey).toMatch(uuid);
    expect(attempts[1]?.idempotencyKey).toBe(attempts[0]?.idempotencyKey);
    // The service made the request on the first attempt and answered the second with it.
    expect(attempts[0]).toMatchObject({ status: 202, replayed: null });
    expect(attempts[1]).toMatchObject({ status: 202, replayed: 'true' });
    expect(retries).toEqual([{ method: 'POST', status: 0, code: 'network_error', retry: 1, delayMs: 30_000 }]);
    expect(delays).toEqual([30_000]);
    expect(await requestsOfAccount(app, accountId)).toEqual({ requests: [submitted.request_id], queuedEvents: 1 });
  });

  it('runs a prompt to completion after the submit’s answer was lost, through the one request it made', async () => {
    const { app, accountId, client, proxy } = await setUp(losingPosts(1));

    const done = await client.run('echo', 'run through a lost answer', { timeoutMs: 600_000 });

    expect(done).toMatchObject({ status: 'completed', response: 'run through a lost answer' });
    expect(posts(proxy.seen)).toHaveLength(2);
    expect(await requestsOfAccount(app, accountId)).toEqual({ requests: [done.req_id], queuedEvents: 1 });
  });

  it('sends a submit again when the connection dropped before the service saw it, and one request exists', async () => {
    const { app, accountId, client, proxy } = await setUp(losingPosts(1, 'lose-call'));

    const submitted = await client.submit('echo', 'lost on the way in');

    const attempts = posts(proxy.seen);
    expect(attempts.map((call) => call.status)).toEqual([undefined, 202]);
    expect(attempts[1]?.idempotencyKey).toBe(attempts[0]?.idempotencyKey);
    expect(attempts[1]?.replayed).toBeNull();
    expect(await requestsOfAccount(app, accountId)).toEqual({ requests: [submitted.request_id], queuedEvents: 1 });
  });

  it('gives up with network_error after maxRetries lost answers, all with one key, having made one request', async () => {
    const { app, accountId, client, proxy, retries } = await setUp(losingPosts(Number.POSITIVE_INFINITY), {
      maxRetries: 2,
    });

    const failure = await client.submit('echo', 'never answered').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 0, code: 'network_error' });
    expect((failure as AirsError).message).toContain(proxy.url);
    const attempts = posts(proxy.seen);
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((call) => call.idempotencyKey)).size).toBe(1);
    expect(retries.map((info) => info.retry)).toEqual([1, 2]);
    const { requests, queuedEvents } = await requestsOfAccount(app, accountId);
    expect(requests).toHaveLength(1);
    expect(queuedEvents).toBe(1);
  });

  it('sends the caller’s key: a repeat with the same prompt answers the same request, another prompt fails at once with AirsIdempotencyError', async () => {
    const { app, accountId, client, proxy, retries } = await setUp(() => 'forward');

    const first = await client.submit('echo', 'job 42', { idempotencyKey: 'job-42' });
    const again = await client.submit('echo', 'job 42', { idempotencyKey: 'job-42' });
    const failure = await client
      .submit('echo', 'another job', { idempotencyKey: 'job-42' })
      .catch((error: unknown) => error);

    expect(again.request_id).toBe(first.request_id);
    expect(posts(proxy.seen).map((call) => call.idempotencyKey)).toEqual(['job-42', 'job-42', 'job-42']);
    expect(failure).toBeInstanceOf(AirsIdempotencyError);
    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 422, code: 'idempotency_key_reused', idempotencyKey: 'job-42' });
    expect(retries).toEqual([]);
    expect(await requestsOfAccount(app, accountId)).toEqual({ requests: [first.request_id], queuedEvents: 1 });
  });

  it('uses the caller’s key in run, so running the same job twice reads the one request', async () => {
    const { app, accountId, client } = await setUp(() => 'forward');

    const first = await client.run('echo', 'twice', { idempotencyKey: 'run-twice' });
    const second = await client.run('echo', 'twice', { idempotencyKey: 'run-twice' });

    expect(second).toEqual(first);
    expect((await requestsOfAccount(app, accountId)).queuedEvents).toBe(1);
  });

  it('refuses a key that is not 1 to 255 visible ASCII characters before sending anything', async () => {
    const { client, proxy } = await setUp(() => 'forward');

    for (const bad of ['', 'with space', 'é', 'x'.repeat(256)]) {
      await expect(client.submit('echo', 'hi', { idempotencyKey: bad })).rejects.toThrow(TypeError);
    }
    expect(proxy.seen).toEqual([]);
  });

  it('retries a poll whose answer was lost, as a GET is always safe to repeat', async () => {
    let gets = 0;
    const { client, proxy, retries } = await setUp((call) =>
      call.method === 'GET' && ++gets === 1 ? 'lose-answer' : 'forward',
    );
    const { request_id } = await client.submit('echo', 'poll me');

    const body = await client.get(request_id);

    expect(body).toMatchObject({ req_id: request_id });
    expect(proxy.seen.filter((call) => call.method === 'GET')).toHaveLength(2);
    expect(retries).toEqual([{ method: 'GET', status: 0, code: 'network_error', retry: 1, delayMs: 30_000 }]);
  });
});

describe('a service that cannot be reached at all', { timeout: 20_000 }, () => {
  it('fails a submit at once with network_error, without retrying: nothing was sent', async () => {
    const closed = await scriptedServer([]);
    await closed.close();
    const delays: number[] = [];
    const client = createClient({
      baseUrl: closed.url,
      apiKey: 'sk_test',
      sleep: async (ms) => {
        delays.push(ms);
      },
    });

    const failure = await client.submit('echo', 'hi').catch((error: unknown) => error);

    expect(failure).toMatchObject({ status: 0, code: 'network_error' });
    expect((failure as AirsError).message).toContain(`cannot reach ${closed.url}`);
    expect(delays).toEqual([]);
  });
});

describe('new idempotency keys', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('are UUIDs made from getRandomValues where randomUUID is missing (browsers outside secure contexts)', () => {
    const real = globalThis.crypto;
    vi.stubGlobal('crypto', { getRandomValues: (array: Uint8Array<ArrayBuffer>) => real.getRandomValues(array) });

    const keys = Array.from({ length: 50 }, () => newIdempotencyKey());

    for (const key of keys) expect(key).toMatch(uuid);
    expect(new Set(keys).size).toBe(50);
  });

  it('are absent on a platform without crypto: the submit then goes without a key and a lost answer is not retried', async () => {
    const keys: Array<string | undefined> = [];
    const server = createServer((request) => {
      const header = request.headers['idempotency-key'];
      keys.push(typeof header === 'string' ? header : undefined);
      request.socket.destroy();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    closers.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const client = createClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: 'sk_test', sleep: async () => {} });
    vi.stubGlobal('crypto', undefined);

    expect(newIdempotencyKey()).toBeUndefined();
    await expect(client.submit('echo', 'hi')).rejects.toMatchObject({ status: 0, code: 'network_error' });
    expect(keys).toEqual([undefined]);
  });
});
