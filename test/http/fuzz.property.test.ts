import { Effect } from 'effect';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/testApp.js';

/**
 * Random HTTP thrown at the in-process app. Whatever comes in, the answer is one of the contract's statuses, an
 * error always has the contract's JSON shape and the code that goes with its status, no answer leaks internals
 * or key material, and nothing a caller sends makes the service answer 500 or stop serving.
 */

const codeFor: Record<number, string> = {
  400: 'invalid_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  413: 'invalid_request',
  429: 'rate_limited',
};
const allowedStatuses = [200, 202, ...Object.keys(codeFor).map(Number)];

/** Characters a header value may hold (a ByteString without control characters). */
const headerValue = fc.string({ unit: fc.integer({ min: 0x20, max: 0xff }).map((c) => String.fromCharCode(c)) });

type Known = { key: string; suspendedKey: string; revokedKey: string; ownId: string; foreignId: string };

const arbitraries = (known: Known) => {
  const method = fc.oneof(
    { weight: 4, arbitrary: fc.constant('POST') },
    { weight: 3, arbitrary: fc.constant('GET') },
    fc.constantFrom('PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS'),
    fc.stringMatching(/^[A-Za-z]{1,8}$/).filter((m) => !['CONNECT', 'TRACE', 'TRACK'].includes(m.toUpperCase())),
  );
  const segment = fc.oneof(
    fc.constantFrom('v1', 'ai', 'v2', 'AI', '..', '.', '', '%2F', '%', '%zz', '%61i', '%00', '%E2%82', 'req_id'),
    fc.webSegment(),
    fc.string({ maxLength: 8 }).map(encodeURIComponent),
    fc.string({ maxLength: 8, unit: 'grapheme-ascii' }).map((s) => s.replace(/[#?]/g, '')),
  );
  const path = fc.oneof(
    { weight: 6, arbitrary: fc.constant('/v1/ai') },
    fc.constantFrom('/v1/ai/', '/v1/ai/..', '//v1/ai', '/v1//ai', '/v1/%61i', '/V1/AI', '/', '/v1', '/v1/ai%20'),
    fc.array(segment, { maxLength: 4 }).map((segments) => `/${segments.join('/')}`),
  );
  const reqId = fc.oneof(
    fc.constantFrom(known.ownId, known.foreignId, '', '%', '%zz', 'req_'),
    fc.string().map(encodeURIComponent),
    fc.base64String({ maxLength: 40 }).map((s) => `req_${s}`),
  );
  const query = fc.option(
    fc.oneof(
      { weight: 3, arbitrary: reqId.map((id) => `?req_id=${id}`) },
      fc.tuple(reqId, reqId).map(([a, b]) => `?req_id=${a}&req_id=${b}`),
      fc.webQueryParameters().map((q) => `?${q}`),
      fc.string({ maxLength: 20, unit: 'grapheme-ascii' }).map((q) => `?${q.replace(/#/g, '')}`),
    ),
    { nil: '' },
  );
  const authorization = fc.option(
    fc.oneof(
      { weight: 8, arbitrary: fc.constant(`Bearer ${known.key}`) },
      fc.constantFrom(
        `bearer ${known.key}`,
        `Bearer  ${known.key} `,
        known.key,
        `Basic ${known.key}`,
        `Bearer ${known.suspendedKey}`,
        `Bearer ${known.revokedKey}`,
        `Bearer ${known.key.slice(0, -1)}`,
        'Bearer',
      ),
      headerValue.map((v) => `Bearer ${v}`),
      headerValue,
    ),
    { nil: undefined },
  );
  const contentType = fc.option(
    fc.oneof(
      { weight: 4, arbitrary: fc.constant('application/json') },
      fc.constantFrom(
        'application/json; charset=utf-8',
        'APPLICATION/JSON',
        'application/json;;;',
        'text/plain',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=x',
      ),
      headerValue,
    ),
    { nil: undefined },
  );
  const framing = fc.option(
    fc.constantFrom<[string, string]>(
      ['content-length', '0'],
      ['content-length', '99999999'],
      ['content-length', 'nonsense'],
      ['transfer-encoding', 'chunked'],
      ['x-forwarded-for', '10.0.0.1'],
      ['accept', 'text/html'],
    ),
    { nil: undefined },
  );
  const anyJson = fc.jsonValue({ maxDepth: 3 });
  const submission = fc.record(
    {
      model: fc.oneof(fc.constant('echo'), fc.string({ maxLength: 20 }), anyJson),
      prompt: fc.oneof(
        fc.string({ maxLength: 50 }),
        fc.string({ minLength: 190, maxLength: 260 }),
        fc.constant(' \n'),
        anyJson,
      ),
      extra: anyJson,
    },
    { requiredKeys: [] },
  );
  const valid = fc.record({
    model: fc.constant('echo'),
    prompt: fc.string({ minLength: 1, maxLength: 50 }).filter((p) => p.trim() !== ''),
  });
  const body = fc.option(
    fc.oneof(
      { weight: 3, arbitrary: valid.map((value) => JSON.stringify(value)) },
      { weight: 3, arbitrary: submission.map((value) => JSON.stringify(value)) },
      anyJson.map((value) => JSON.stringify(value)),
      fc.string({ maxLength: 100 }),
      fc.uint8Array({ maxLength: 200 }),
      fc.string({ minLength: 900, maxLength: 3_000 }),
      fc.constant(JSON.stringify({ model: 'echo', prompt: 'x'.repeat(5_000) })),
      fc.constant('{"model": "echo", "prompt": "unterminated'),
    ),
    { nil: undefined },
  );
  return fc.record({ method, path, query, authorization, contentType, framing, body });
};

type Case = ReturnType<typeof arbitraries> extends fc.Arbitrary<infer T> ? T : never;

const send = (app: TestApp, c: Case) => {
  const headers = new Headers();
  if (c.authorization !== undefined) headers.set('authorization', c.authorization);
  if (c.contentType !== undefined) headers.set('content-type', c.contentType);
  if (c.framing !== undefined) headers.set(c.framing[0], c.framing[1]);
  const bodyAllowed = !['GET', 'HEAD'].includes(c.method.toUpperCase());
  const init: RequestInit = { method: c.method, headers, body: bodyAllowed ? c.body : undefined };
  return app.http.request(`http://airs.test${c.path}${c.query}`, init);
};

const checkAnswer = async (c: Case, response: Response, known: Known) => {
  const text = await response.text();
  const context = `${c.method} ${c.path}${c.query} -> ${response.status} ${text.slice(0, 300)}`;
  expect(allowedStatuses, context).toContain(response.status);
  expect(text, context).not.toContain(known.key);
  expect(text, context).not.toMatch(/node_modules|\/work\/|\n\s+at /);
  if (c.method.toUpperCase() === 'HEAD' && text === '') return;
  expect(response.headers.get('content-type'), context).toMatch(/^application\/json\b/);
  const body = JSON.parse(text) as Record<string, unknown>;
  if (response.status === 202) {
    expect(body, context).toEqual({ request_id: expect.stringMatching(/^req_[A-Za-z0-9_-]{22,}$/), model: 'echo' });
  } else if (response.status === 200) {
    expect(body, context).toMatchObject({
      req_id: expect.any(String),
      status: expect.stringMatching(/^(queued|completed)$/),
    });
  } else {
    expect(Object.keys(body), context).toEqual(['error']);
    const error = body.error as Record<string, unknown>;
    expect(error.code, context).toBe(codeFor[response.status]);
    expect(typeof error.message, context).toBe('string');
    expect(
      Object.keys(error).every((name) => ['code', 'message', 'details'].includes(name)),
      context,
    ).toBe(true);
    if (response.status === 405) expect(response.headers.get('allow'), context).toBe('GET, POST');
    if (response.status === 401) expect(response.headers.get('www-authenticate'), context).toMatch(/^Bearer/);
  }
};

describe('the HTTP surface under random input', () => {
  let app: TestApp;
  let known: Known;

  beforeAll(async () => {
    app = await startTestApp({
      config: {
        models: [{ id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }],
        maxBodyBytes: 1024,
        maxPromptChars: 200,
      },
    });
    const owner = await app.account('enterprise');
    const stranger = await app.account('enterprise');
    const suspended = await app.account();
    const revoked = await app.account();
    await Effect.runPromise(app.accounts.suspend(suspended.accountId));
    await Effect.runPromise(app.accounts.revokeKey(revoked.keyId));
    const submitted = async (key: string) => {
      const answer = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'seed' } });
      return ((await answer.json()) as { request_id: string }).request_id;
    };
    known = {
      key: owner.key,
      suspendedKey: suspended.key,
      revokedKey: revoked.key,
      ownId: await submitted(owner.key),
      foreignId: await submitted(stranger.key),
    };
    await app.processor.idle();
  });
  afterAll(() => app?.stop());

  it('answers every random request with a contract status and shape, and never with a 500', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraries(known), async (c) => {
        await checkAnswer(c, await send(app, c), known);
      }),
      { numRuns: 250 },
    );
  }, 60_000);

  it('still accepts and completes a valid request after the random ones', async () => {
    const posted = await app.call('POST', '/v1/ai', { key: known.key, body: { model: 'echo', prompt: 'still here' } });
    expect(posted.status).toBe(202);
    const { request_id } = (await posted.json()) as { request_id: string };
    await app.processor.idle();
    const polled = await app.call('GET', `/v1/ai?req_id=${request_id}`, { key: known.key });
    expect(polled.status).toBe(200);
    expect(await polled.json()).toEqual({
      req_id: request_id,
      status: 'completed',
      model: 'echo',
      response: 'still here',
    });
  });
});
