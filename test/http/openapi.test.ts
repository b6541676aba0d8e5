import { readFileSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { openApiDocument, openApiText } from '../../src/adapters/http/openapi.js';
import { submissionBodySchema } from '../../src/app/submission.js';
import { startTestApp, type TestApp } from '../support/testApp.js';
import { transports } from './support/contract.js';
import { openApiChecker } from './support/openapi.js';

const committedPath = new URL('../../docs/openapi.json', import.meta.url);

/**
 * The OpenAPI document (product contract section 10): generated from the zod schemas, served at
 * `GET /v1/openapi.json`, committed as docs/openapi.json. `npm run openapi` (UPDATE_OPENAPI=1) rewrites the file.
 * That every answer of the contract suites matches it is checked in support/contract.ts.
 */
describe('the OpenAPI document', () => {
  it('docs/openapi.json is exactly the document the code generates (npm run openapi rewrites it)', () => {
    if (process.env.UPDATE_OPENAPI === '1') writeFileSync(committedPath, openApiText());
    expect(readFileSync(committedPath, 'utf8'), 'docs/openapi.json is stale: run `npm run openapi`').toBe(
      openApiText(),
    );
  });

  it('is OpenAPI 3.1 documenting POST and GET /v1/ai and GET /v1/openapi.json, with schemas ajv compiles as 2020-12', () => {
    const document = openApiDocument() as {
      openapi: string;
      jsonSchemaDialect: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, object>; headers: Record<string, { schema: object }> };
    };
    expect(document.openapi).toMatch(/^3\.1\.\d+$/);
    expect(document.jsonSchemaDialect).toBe('https://json-schema.org/draft/2020-12/schema');
    expect(Object.keys(document.paths).filter((path) => path.startsWith('/v1/'))).toEqual([
      '/v1/ai',
      '/v1/openapi.json',
    ]);
    expect(Object.keys(document.paths['/v1/ai'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(document.paths['/v1/ai']?.post?.responses ?? {})).toEqual([
      '202',
      '400',
      '401',
      '403',
      '413',
      '422',
      '429',
      '431',
      '500',
      '503',
    ]);
    expect(Object.keys(document.paths['/v1/ai']?.get?.responses ?? {})).toEqual([
      '200',
      '400',
      '401',
      '403',
      '404',
      '429',
      '431',
      '500',
      '503',
    ]);
    // Strict mode: an unknown keyword in a generated schema is an error, not ignored.
    const ajv = new Ajv2020({ strict: true });
    for (const [name, schema] of Object.entries(document.components.schemas)) {
      expect(() => ajv.compile(schema), name).not.toThrow();
    }
    for (const [name, headerObject] of Object.entries(document.components.headers)) {
      expect(() => ajv.compile(headerObject.schema), name).not.toThrow();
    }
  });

  it('describes the POST body as the zod schema the server parses it with', () => {
    const validate = new Ajv2020().compile(
      (openApiDocument() as { components: { schemas: { SubmitRequest: object } } }).components.schemas.SubmitRequest,
    );
    const bodies = [
      { model: 'echo', prompt: 'hi' },
      { model: 'echo', prompt: 'hi', temperature: 0.2 },
      { model: 'echo' },
      { prompt: 'hi' },
      { model: 42, prompt: 'hi' },
      { model: 'echo', prompt: null },
      [],
      'hello',
      null,
    ];
    for (const body of bodies)
      expect(validate(body), JSON.stringify(body)).toBe(submissionBodySchema.safeParse(body).success);
  });

  it('refuses answers the document forbids (so the contract suites’ check is not vacuous)', () => {
    const { problems } = openApiChecker();
    const headers = (entries: Record<string, string>) =>
      new Headers({ 'content-type': 'application/json', ...entries });
    const limits = { 'ratelimit-policy': '"submits";q=60;w=60', ratelimit: '"submits";r=59;t=1' };
    const polls = { 'ratelimit-policy': '"polls";q=600;w=60', ratelimit: '"polls";r=599;t=1' };
    const reqId = `req_${'a'.repeat(22)}`;
    const accepted = { request_id: reqId, model: 'echo' };
    const location = { location: `/v1/ai?req_id=${reqId}` };
    const ok = {
      method: 'POST',
      path: '/v1/ai',
      status: 202,
      headers: headers({ ...limits, ...location }),
      body: accepted,
    };
    expect(problems(ok)).toEqual([]);
    expect(problems({ ...ok, body: { req_id: reqId, model: 'echo' } }).join()).toMatch(/request_id/);
    expect(problems({ ...ok, headers: headers(limits) }).join()).toMatch(/Location is missing/);
    expect(problems({ ...ok, headers: headers({ ...location, ratelimit: '59' }) }).join()).toMatch(/RateLimit/);
    expect(problems({ ...ok, status: 200 }).join()).toMatch(/not documented/);
    expect(
      problems({ ...ok, headers: new Headers({ ...limits, ...location, 'content-type': 'text/plain' }) }).join(),
    ).toMatch(/content type/);
    const poll = { method: 'GET', path: `/v1/ai?req_id=${reqId}`, status: 200, headers: headers(polls) };
    expect(problems({ ...poll, body: { req_id: reqId, status: 'queued', model: 'echo' } })).toEqual([]);
    expect(problems({ ...poll, body: { req_id: reqId, status: 'completed', model: 'echo' } }).join()).toMatch(
      /response/,
    );
    expect(problems({ ...poll, body: { req_id: reqId, status: 'failed', model: 'echo' } })).not.toEqual([]);
    const refused = { method: 'GET', path: '/v1/ai', status: 429, headers: headers({ ...polls, 'retry-after': '3' }) };
    const error = { error: { code: 'rate_limited', message: 'spent', details: { budget: 'polls' } } };
    expect(problems({ ...refused, body: error })).toEqual([]);
    expect(problems({ ...refused, headers: headers(polls), body: error }).join()).toMatch(/Retry-After is missing/);
    expect(problems({ ...refused, body: { error: { ...error.error, stack: 'at x' } } })).not.toEqual([]);
    expect(problems({ ...refused, body: { error: { code: 'slow_down', message: 'spent' } } })).not.toEqual([]);
    expect(
      problems({ method: 'GET', path: '/nowhere', status: 404, headers: headers({}), body: { message: 'gone' } }),
    ).not.toEqual([]);
  });

  describe.each(transports)('GET /v1/openapi.json, $name', (transport) => {
    let app: TestApp;
    afterEach(() => app.stop());

    it('serves the committed document as application/json, without a key and without spending a budget', async () => {
      app = await startTestApp();
      const client = await transport.open(app);
      try {
        const answer = await client.call('GET', '/v1/openapi.json');
        expect(answer.status).toBe(200);
        expect(answer.headers.get('content-type')).toBe('application/json');
        expect(answer.text).toBe(readFileSync(committedPath, 'utf8'));
        expect(answer.headers.get('ratelimit')).toBeNull();
        const other = await client.call('POST', '/v1/openapi.json', { body: {} });
        expect(other.status).toBe(404);
      } finally {
        await client.close();
      }
    });
  });
});
