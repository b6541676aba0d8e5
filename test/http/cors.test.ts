import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { listen, startTestApp, type TestApp } from '../support/testApp.js';

/**
 * CORS for browser clients (contract 13): `cors.allowedOrigins` (default none: no CORS header at all). An allowed
 * origin's calls to `/v1/*` carry `Access-Control-Allow-Origin` for it (errors and streams too) and its preflights are
 * answered `204` with the methods and headers airs accepts, the OpenAI SDKs' `x-stainless-*` included; credentials
 * are never allowed; nothing outside `/v1/` is opened.
 */

const page = 'https://app.example.com';

let app: TestApp | undefined;
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const start = async (allowedOrigins: readonly string[]) => {
  app = await startTestApp({ config: { cors: { allowedOrigins } } });
  const { key } = await app.account('scale');
  return { app, key };
};

const preflight = (testApp: TestApp, path: string, origin: string, requestHeaders?: string) =>
  testApp.call('OPTIONS', path, {
    headers: {
      origin,
      'access-control-request-method': 'POST',
      ...(requestHeaders === undefined ? {} : { 'access-control-request-headers': requestHeaders }),
    },
  });

const corsHeadersOf = (response: Response) =>
  Object.fromEntries([...response.headers].filter(([name]) => name.startsWith('access-control-')));

/** What the OpenAI SDK for JavaScript asks for in a browser (its `x-stainless-*` headers and the key). */
const sdkHeaders =
  'authorization,content-type,x-stainless-arch,x-stainless-lang,x-stainless-os,x-stainless-package-version,' +
  'x-stainless-retry-count,x-stainless-runtime,x-stainless-runtime-version,x-stainless-timeout,x-stainless-brand-new';

describe('Without cors.allowedOrigins', () => {
  it('sends no CORS header at all, and a preflight is an OPTIONS like any other (405)', async () => {
    const { app, key } = await start([]);
    const answers = [
      await preflight(app, '/v1/chat/completions', page, 'authorization'),
      await app.call('POST', '/v1/chat/completions', {
        key,
        headers: { origin: page },
        body: { model: 'echo', messages: [{ role: 'user', content: 'hi' }] },
      }),
      await app.call('POST', '/v1/ai', { key, headers: { origin: page }, body: { model: 'echo', prompt: 'hi' } }),
    ];
    expect(answers.map((answer) => answer.status)).toEqual([405, 200, 202]);
    for (const answer of answers) expect(corsHeadersOf(answer)).toEqual({});
  });

  it('is the default of the configuration', () => {
    expect(loadConfig({}, mkdtempSync(join(tmpdir(), 'airs-cors-'))).cors).toEqual({ allowedOrigins: [] });
  });
});

describe('With an allowed origin', () => {
  it('answers its preflight 204 with the methods and headers airs accepts, the SDK’s new x-stainless headers too, never credentials', async () => {
    const { app } = await start([page]);
    for (const path of ['/v1/chat/completions', '/v1/responses', '/v1/ai', '/v1/models/echo', '/v1/nothing-here']) {
      const answer = await preflight(app, path, page, sdkHeaders);
      expect(answer.status, path).toBe(204);
      const headers = corsHeadersOf(answer);
      expect(headers['access-control-allow-origin']).toBe(page);
      expect(headers['access-control-allow-methods']).toBe('GET, POST, OPTIONS');
      const allowed = (headers['access-control-allow-headers'] ?? '').split(', ');
      for (const name of sdkHeaders.split(',')) expect(allowed, name).toContain(name);
      expect(allowed).toContain('idempotency-key');
      expect(headers['access-control-max-age']).toBe('600');
      expect(headers).not.toHaveProperty('access-control-allow-credentials');
      expect(answer.headers.get('vary')).toMatch(/Origin/);
    }
  });

  it('does not allow request headers outside its list', async () => {
    const { app } = await start([page]);
    const answer = await preflight(app, '/v1/chat/completions', page, 'authorization,x-evil,cookie');
    expect(answer.headers.get('access-control-allow-headers')).not.toMatch(/x-evil|cookie/);
  });

  it('puts Access-Control-Allow-Origin and the exposed headers on answers, errors and streams alike', async () => {
    const { app, key } = await start([page]);
    const headers = { origin: page };
    const messages = [{ role: 'user', content: 'hi' }];
    const answers = {
      chat: await app.call('POST', '/v1/chat/completions', { key, headers, body: { model: 'echo', messages } }),
      stream: await app.call('POST', '/v1/chat/completions', {
        key,
        headers,
        body: { model: 'echo', messages, stream: true },
      }),
      submit: await app.call('POST', '/v1/ai', { key, headers, body: { model: 'echo', prompt: 'hi' } }),
      models: await app.call('GET', '/v1/models', { key, headers }),
      unauthorized: await app.call('GET', '/v1/models', { headers }),
      unknownPath: await app.call('GET', '/v1/nothing-here', { key, headers }),
      malformedPath: await app.call('GET', '/v1/responses/%E2%82', { key, headers }),
      openapi: await app.call('GET', '/v1/openapi.json', { headers }),
    };
    expect(Object.fromEntries(Object.entries(answers).map(([name, answer]) => [name, answer.status]))).toEqual({
      chat: 200,
      stream: 200,
      submit: 202,
      models: 200,
      unauthorized: 401,
      unknownPath: 404,
      malformedPath: 400,
      openapi: 200,
    });
    for (const [name, answer] of Object.entries(answers)) {
      expect(answer.headers.get('access-control-allow-origin'), name).toBe(page);
      expect(answer.headers.get('vary'), name).toBe('Origin');
      expect(answer.headers.get('access-control-allow-credentials'), name).toBeNull();
      const exposed = answer.headers.get('access-control-expose-headers') ?? '';
      for (const name of ['RateLimit', 'Retry-After', 'x-request-id']) expect(exposed).toContain(name);
      await answer.text();
    }
    app.stopAccepting();
    const stopping = await app.call('GET', '/v1/models', { key, headers });
    expect(stopping.status).toBe(503);
    expect(stopping.headers.get('access-control-allow-origin')).toBe(page);
  });

  it('sends nothing to another origin, nor outside /v1/', async () => {
    const { app, key } = await start([page]);
    const other = await app.call('GET', '/v1/models', { key, headers: { origin: 'https://evil.example.com' } });
    expect(corsHeadersOf(other)).toEqual({});
    expect((await preflight(app, '/v1/models', 'https://evil.example.com')).status).toBe(405);
    for (const path of ['/dashboard/login', '/metrics', '/healthz']) {
      const answer = await app.call('GET', path, { headers: { origin: page } });
      expect(corsHeadersOf(answer), path).toEqual({});
    }
  });

  it('with * allows every origin, naming it in the answer', async () => {
    const { app, key } = await start(['*']);
    const answer = await app.call('GET', '/v1/models', { key, headers: { origin: 'http://localhost:5173' } });
    expect(answer.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });

  it('carries the headers over a real socket', async () => {
    const { app, key } = await start([page]);
    const served = await listen(app);
    try {
      const headers = await new Promise<Record<string, unknown>>((resolve, reject) => {
        const call = request(
          `${served.url}/v1/models`,
          { headers: { origin: page, authorization: `Bearer ${key}` } },
          (response) => {
            response.resume();
            resolve(response.headers);
          },
        );
        call.on('error', reject);
        call.end();
      });
      expect(headers['access-control-allow-origin']).toBe(page);
    } finally {
      await served.close();
    }
  });
});

describe('cors.allowedOrigins in the config file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-cors-config-'));
  const load = (allowedOrigins: unknown) => {
    const path = join(dir, `c${Math.random()}.json`);
    writeFileSync(path, JSON.stringify({ cors: { allowedOrigins } }));
    return () => loadConfig({ AIRS_CONFIG: path }, dir);
  };

  it('takes origins and *', () => {
    expect(load(['https://app.example.com', 'http://localhost:3000', '*'])().cors.allowedOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:3000',
      '*',
    ]);
  });

  it.each([
    'https://app.example.com/',
    'app.example.com',
    'https://app.example.com/path',
    'ftp://app.example.com',
    'https://APP.example.com',
    '',
  ])('refuses %j, naming the key', (origin) => {
    expect(load([origin])).toThrow(/cors\.allowedOrigins\[0\]: expected an origin/);
  });
});
