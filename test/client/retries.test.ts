import { afterEach, describe, expect, it } from 'vitest';
import { AirsError, createClient, parseRetryAfter, type SleepFn } from '../../src/client/index.js';
import { completed, queued, type ScriptedAnswer, scriptedServer, serverError } from './support.js';

/** The client against a scripted HTTP server on 127.0.0.1, for answers the real service gives only rarely. */

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

const scripted = async (answers: readonly ScriptedAnswer[], options: { maxRetries?: number } = {}) => {
  const server = await scriptedServer(answers);
  servers.push(server);
  const delays: number[] = [];
  let now = Date.UTC(2026, 0, 1);
  const sleep: SleepFn = async (ms) => {
    delays.push(ms);
    now += ms;
  };
  const client = createClient({ baseUrl: server.url, apiKey: 'sk_test', sleep, now: () => now, ...options });
  return { client, delays, seen: server.seen };
};

describe('the client’s retries and answers, against a scripted server', { timeout: 20_000 }, () => {
  it('retries a 500 after 30 seconds and a 503 after its Retry-After, then returns the answer', async () => {
    const { client, delays, seen } = await scripted([
      serverError(500),
      serverError(503, { 'retry-after': '7' }),
      completed('req_a', 'finally'),
    ]);

    const body = await client.get('req_a');

    expect(body).toMatchObject({ status: 'completed', response: 'finally' });
    expect(delays).toEqual([30_000, 7_000]);
    expect(seen.map((call) => call.url)).toEqual(Array(3).fill('/v1/ai?req_id=req_a'));
  });

  it('gives up after the configured number of retries with the last 500 as an AirsError server_error', async () => {
    const { client, delays, seen } = await scripted([serverError(500)], { maxRetries: 2 });

    const failure = await client.submit('echo', 'hi').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 500, code: 'server_error', message: 'internal error' });
    expect(delays).toEqual([30_000, 30_000]);
    expect(seen).toHaveLength(3);
  });

  it('retries a 500 three times by default', async () => {
    const { client, delays, seen } = await scripted([serverError(500)]);

    await expect(client.get('req_a')).rejects.toMatchObject({ status: 500, code: 'server_error' });

    expect(delays).toEqual([30_000, 30_000, 30_000]);
    expect(seen).toHaveLength(4);
  });

  it('polls every 5 seconds when queued answers carry no Retry-After', async () => {
    const { client, delays } = await scripted([queued('req_q'), queued('req_q'), completed('req_q', 'ok')]);

    const done = await client.wait('req_q');

    expect(done.response).toBe('ok');
    expect(delays).toEqual([5_000, 5_000]);
  });

  it('sends the key as a Bearer token and the prompt as JSON', async () => {
    const { client, seen } = await scripted([{ status: 202, body: { request_id: 'req_new', model: 'echo' } }]);

    const submitted = await client.submit('echo', 'hi');

    expect(submitted).toEqual({ request_id: 'req_new', model: 'echo' });
    expect(seen).toEqual([{ method: 'POST', url: '/v1/ai', authorization: 'Bearer sk_test' }]);
  });

  it('turns an error answer without the standard body into a typed error named after its status', async () => {
    const { client, delays } = await scripted([{ status: 418, body: '<html>teapot</html>' }]);

    const failure = await client.get('req_a').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 418, code: 'http_error', message: 'the service answered HTTP 418' });
    expect(delays).toEqual([]);
  });

  it('refuses a success answer that lacks the fields the API promises as invalid_response', async () => {
    const { client } = await scripted([{ status: 202, body: { id: 'req_x' } }]);

    await expect(client.submit('echo', 'hi')).rejects.toMatchObject({ status: 202, code: 'invalid_response' });
  });

  it('reports a server that cannot be reached as network_error, without retrying', async () => {
    const server = await scriptedServer([completed()]);
    await server.close();
    const delays: number[] = [];
    const client = createClient({
      baseUrl: server.url,
      apiKey: 'sk_test',
      sleep: async (ms) => {
        delays.push(ms);
      },
    });

    const failure = await client.get('req_a').catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(AirsError);
    expect(failure).toMatchObject({ status: 0, code: 'network_error' });
    expect((failure as AirsError).message).toContain(server.url);
    expect(delays).toEqual([]);
  });
});

describe('Retry-After', () => {
  it('is read as seconds or as an HTTP date, and is absent when missing or unreadable', () => {
    const now = Date.UTC(2026, 0, 1, 12, 0, 0);
    expect(parseRetryAfter('5', now)).toBe(5_000);
    expect(parseRetryAfter(' 30 ', now)).toBe(30_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 12:00:42 GMT', now)).toBe(42_000);
    expect(parseRetryAfter('Thu, 01 Jan 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
  });
});

describe('createClient', () => {
  it('refuses a missing key or a base URL that is not http(s) before any call', () => {
    expect(() => createClient({ baseUrl: 'http://127.0.0.1:1', apiKey: '' })).toThrow(/apiKey/);
    expect(() => createClient({ baseUrl: 'ftp://example.com', apiKey: 'sk_x' })).toThrow(/baseUrl/);
    expect(() => createClient({ baseUrl: 'http://127.0.0.1:1', apiKey: 'sk_x', maxRetries: -1 })).toThrow(/maxRetries/);
  });
});
