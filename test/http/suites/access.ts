import { Effect } from 'effect';
import { describe, expect, it } from 'vitest';
import {
  type Answer,
  dayMs,
  expectError,
  expectRateLimitHeaders,
  poll,
  submit,
  type Transport,
  useContractApp,
} from '../support/contract.js';

const unknownKey = `sk_${'A'.repeat(43)}`;
const unknownReqId = `req_${'B'.repeat(22)}`;

const expectUnauthorized = (answer: Answer) => {
  const error = expectError(answer, 401, 'unauthorized');
  expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer\b/);
  return error;
};

/** Authentication (401/403), lookups (404) and routing (404/405). */
export const accessSuite = (transport: Transport) =>
  describe('authentication, lookup and routing', () => {
    const env = useContractApp(transport);

    it.each(['POST', 'GET'])(
      'refuses a %s without an Authorization header with 401 and WWW-Authenticate',
      async (m) => {
        const answer = await env.client.call(m, '/v1/ai?req_id=req_x', {
          body: m === 'POST' ? { model: 'echo' } : undefined,
        });
        expect(expectUnauthorized(answer).message).toMatch(/Authorization/);
      },
    );

    it.each([
      ['a Basic credential', () => 'Basic dXNlcjpwYXNz'],
      ['a bare key without the Bearer scheme', (key: string) => key],
      ['another scheme with a valid key', (key: string) => `Token ${key}`],
      ['Bearer with no key', () => 'Bearer'],
      ['Bearer with two tokens', (key: string) => `Bearer ${key} ${key}`],
      ['Bearer with a key of the wrong form', () => 'Bearer sk_short'],
      ['Bearer with a well-formed key that does not exist', () => `Bearer ${unknownKey}`],
    ])('refuses an Authorization header holding %s with 401 unauthorized', async (_, header) => {
      const { key } = await env.app.account();
      const headers = { authorization: header(key) };
      const posted = await env.client.call('POST', '/v1/ai', { body: { model: 'echo', prompt: 'hi' }, headers });
      expectUnauthorized(posted);
      expect(posted.text).not.toContain(key);
      expectUnauthorized(await env.client.call('GET', `/v1/ai?req_id=${unknownReqId}`, { headers }));
    });

    it('refuses a revoked key with 401 on the very next request', async () => {
      const { key, keyId } = await env.app.account();
      const reqId = await submit(env.client, key);
      await Effect.runPromise(env.app.accounts.revokeKey(keyId));
      expect(expectUnauthorized(await poll(env.client, key, reqId)).message).toMatch(/revoked/);
      expectUnauthorized(await env.client.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } }));
    });

    it('refuses a valid key of a suspended account with 403 forbidden, and serves it again once resumed', async () => {
      const { accountId, key } = await env.app.account();
      const reqId = await submit(env.client, key);
      await Effect.runPromise(env.app.accounts.suspend(accountId));
      expectError(
        await env.client.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } }),
        403,
        'forbidden',
      );
      expectError(await poll(env.client, key, reqId), 403, 'forbidden');
      await Effect.runPromise(env.app.accounts.resume(accountId));
      expect((await poll(env.client, key, reqId)).status).toBe(200);
    });

    it('answers a poll of an unknown req_id with 404 not_found', async () => {
      const { key } = await env.app.account();
      const answer = await poll(env.client, key, unknownReqId);
      expectError(answer, 404, 'not_found');
      expectRateLimitHeaders(answer, 'polls', 600);
    });

    it.each([200, 2_000, 5_000])(
      'answers a poll of an unknown req_id of %i characters with 404 not_found and its RateLimit headers',
      async (length) => {
        const { key } = await env.app.account();
        const answer = await poll(env.client, key, `req_${'C'.repeat(length - 4)}`);
        expect(expectError(answer, 404, 'not_found').message.length).toBeLessThan(200);
        expectRateLimitHeaders(answer, 'polls', 600);
      },
    );

    it("answers a poll of another account's req_id exactly like an unknown one", async () => {
      const owner = await env.app.account();
      const other = await env.app.account();
      const reqId = await submit(env.client, owner.key);
      await env.app.processor.idle();
      const foreign = await poll(env.client, other.key, reqId);
      const unknown = await poll(env.client, other.key, unknownReqId);
      expectError(foreign, 404, 'not_found');
      expect(foreign.text.replaceAll(reqId, '<id>')).toBe(unknown.text.replaceAll(unknownReqId, '<id>'));
      expect([...foreign.headers.keys()].sort()).toEqual([...unknown.headers.keys()].sort());
      expect(foreign.text).not.toContain('hello');
    });

    it('answers a poll 404 once 24 hours have passed since creation, before any sweep has run', async () => {
      const { key } = await env.app.account();
      const done = await submit(env.client, key);
      await env.app.processor.idle();
      const waiting = await submit(env.client, key, 'slow');
      env.clock.advance(dayMs - 1);
      expect((await poll(env.client, key, done)).status).toBe(200);
      expect((await poll(env.client, key, waiting)).status).toBe(200);
      env.clock.advance(1);
      expect(expectError(await poll(env.client, key, done), 404, 'not_found').message).toMatch(/expire/);
      expectError(await poll(env.client, key, waiting), 404, 'not_found');
    });

    it.each(['PUT', 'DELETE', 'PATCH'])('answers %s on /v1/ai with 405 and Allow: GET, POST', async (method) => {
      const { key } = await env.app.account();
      const answer = await env.client.call(method, '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } });
      expectError(answer, 405, 'method_not_allowed');
      expect(answer.headers.get('allow')).toBe('GET, POST');
    });

    // `GET /` is a page for people (the dashboard's routes); every other method on `/` is unknown.
    it.each(['/v1', '/v2/ai', '/v1/ai/extra', '/v1/requests', '/favicon.ico'])(
      'answers any method on the unknown path %s with a JSON 404 not_found, with or without a key',
      async (path) => {
        const { key } = await env.app.account();
        for (const method of ['GET', 'POST', 'DELETE']) {
          const body = method === 'POST' ? { model: 'echo', prompt: 'hi' } : undefined;
          expectError(await env.client.call(method, path, { key, body }), 404, 'not_found');
          expectError(await env.client.call(method, path, { body }), 404, 'not_found');
        }
      },
    );
  });
