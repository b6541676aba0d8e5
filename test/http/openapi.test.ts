import { readFileSync, writeFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it } from 'vitest';
import { batchEndpoints } from '../../src/adapters/http/openai/batchEndpoints.js';
import { batchCreateBodySchema, batchEndpointPaths } from '../../src/adapters/http/openai/batches/bodies.js';
import { parseResponsesCreate } from '../../src/adapters/http/openai/input.js';
import { openApiDocument, openApiText } from '../../src/adapters/http/openapi.js';
import { submissionBodySchema } from '../../src/app/submission.js';
import { newWebhookSecret, signWebhook } from '../../src/app/webhooks/signing.js';
import { InvalidRequest } from '../../src/domain/errors.js';
import { envelopeEventOf } from '../../src/domain/webhook/dueDeliveries.js';
import { webhookBody, webhookEventTypes } from '../../src/domain/webhook/envelope.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { systemClock } from '../../src/ports/Clock.js';
import { eventually, listen, requestInit, startTestApp, type TestApp } from '../support/testApp.js';
import { contractConfig, transports } from './support/contract.js';
import { openApiChecker } from './support/openapi.js';

const committedPath = new URL('../../docs/openapi.json', import.meta.url);

/** `POST /v1/batches` bodies the route takes and ones it refuses, naming the input file `fileId`. */
const batchCreateBodies = (fileId: string): unknown[] => {
  const body = { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' };
  return [
    body,
    { ...body, endpoint: '/v1/responses', metadata: { job: 'nightly' }, unknown_field: 1 },
    { ...body, metadata: null, output_expires_after: null },
    { ...body, output_expires_after: { anchor: 'created_at', seconds: 3_600 } },
    { endpoint: body.endpoint, completion_window: '24h' },
    { input_file_id: fileId, completion_window: '24h' },
    { input_file_id: fileId, endpoint: body.endpoint },
    { ...body, input_file_id: 42 },
    { ...body, endpoint: '/v1/embeddings' },
    { ...body, endpoint: '/v1/completions' },
    { ...body, completion_window: '48h' },
    { ...body, completion_window: 24 },
    { ...body, metadata: { job: 5 } },
    { ...body, metadata: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v'])) },
    { ...body, metadata: { ['k'.repeat(65)]: 'v' } },
    { ...body, metadata: 'nightly' },
    { ...body, output_expires_after: { anchor: 'completed_at', seconds: 3_600 } },
    { ...body, output_expires_after: { anchor: 'created_at', seconds: 60 } },
    { ...body, output_expires_after: { anchor: 'created_at', seconds: 3_600.5 } },
    { ...body, output_expires_after: { anchor: 'created_at' } },
    [],
    'hello',
    null,
  ];
};

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

  it('is OpenAPI 3.1 documenting /v1/ai, the OpenAI-compatible routes and GET /v1/openapi.json, with schemas ajv compiles as 2020-12', () => {
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
      '/v1/chat/completions',
      '/v1/models',
      '/v1/models/{id}',
      '/v1/responses',
      '/v1/responses/{id}',
      '/v1/responses/{id}/cancel',
      '/v1/files',
      '/v1/files/{id}',
      '/v1/files/{id}/content',
      '/v1/batches',
      '/v1/batches/{id}',
      '/v1/batches/{id}/cancel',
      '/v1/admin/accounts',
      '/v1/admin/accounts/{id}',
      '/v1/admin/accounts/{id}/keys',
      '/v1/admin/keys/{id}',
      '/v1/admin/usage',
      '/v1/openapi.json',
    ]);
    expect(Object.keys(document.paths['/v1/ai'] ?? {}).sort()).toEqual(['get', 'post']);
    expect(Object.keys(document.paths['/v1/ai']?.post?.responses ?? {})).toEqual([
      '202',
      '400',
      '401',
      '403',
      '408',
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
      '408',
      '429',
      '431',
      '500',
      '503',
    ]);
    const methodsAndStatuses = (path: string) =>
      Object.fromEntries(
        Object.entries(document.paths[path] ?? {})
          .filter(([method]) => method !== 'description')
          .map(([method, operation]) => [method, Object.keys(operation.responses)]),
      );
    expect(methodsAndStatuses('/v1/chat/completions')).toEqual({
      post: ['200', '400', '401', '403', '404', '408', '413', '422', '429', '431', '500', '503'],
    });
    expect(methodsAndStatuses('/v1/models')).toEqual({ get: ['200', '401', '403', '408', '429', '431', '500', '503'] });
    expect(methodsAndStatuses('/v1/models/{id}')).toEqual({
      get: ['200', '400', '401', '403', '404', '408', '429', '431', '500', '503'],
    });
    expect(methodsAndStatuses('/v1/responses')).toEqual({
      post: ['200', '400', '401', '403', '404', '408', '413', '422', '429', '431', '500', '503'],
    });
    expect(methodsAndStatuses('/v1/responses/{id}')).toEqual({
      get: ['200', '400', '401', '403', '404', '408', '429', '431', '500', '503'],
    });
    expect(methodsAndStatuses('/v1/responses/{id}/cancel')).toEqual({
      post: ['200', '400', '401', '403', '404', '408', '429', '431', '500', '503'],
    });
    // OpenAI's Files and Batches (contract 16): every route the face serves, with its methods.
    const idRoute = ['200', '400', '401', '403', '404', '408', '429', '431', '500', '503'];
    const listRoute = ['200', '400', '401', '403', '408', '429', '431', '500', '503'];
    expect(methodsAndStatuses('/v1/files')).toEqual({
      post: ['200', '400', '401', '403', '408', '413', '429', '431', '500', '503'],
      get: listRoute,
    });
    expect(methodsAndStatuses('/v1/files/{id}')).toEqual({ get: idRoute, delete: idRoute });
    expect(methodsAndStatuses('/v1/files/{id}/content')).toEqual({ get: idRoute });
    expect(methodsAndStatuses('/v1/batches')).toEqual({
      post: ['200', '400', '401', '403', '404', '408', '413', '429', '431', '500', '503'],
      get: listRoute,
    });
    expect(methodsAndStatuses('/v1/batches/{id}')).toEqual({ get: idRoute });
    expect(methodsAndStatuses('/v1/batches/{id}/cancel')).toEqual({ post: idRoute });
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

  it('describes the POST /v1/responses body as the OpenAI face’s parser reads it', () => {
    const validate = new Ajv2020().compile(
      (openApiDocument() as { components: { schemas: { ResponsesCreate: object } } }).components.schemas
        .ResponsesCreate,
    );
    const message = (content: unknown, extra: Record<string, unknown> = {}) => ({ role: 'user', content, ...extra });
    // Rules beyond the shape (an input of only white space, an unknown model, a too long input) are checked later.
    const bodies = [
      { model: 'echo', input: 'hi' },
      { model: 'echo', input: 'hi', background: true, instructions: 'be brief', temperature: 0.2, store: false },
      { model: 'echo', input: 'hi', background: null, instructions: null, stream: false, tools: [] },
      { model: 'echo', input: [message('hi')] },
      { model: 'echo', input: [message([{ type: 'input_text', text: 'hi' }], { type: 'message' })] },
      {
        model: 'echo',
        input: [{ role: 'system', content: 'terse' }, message('hi'), { role: 'assistant', content: 'hello' }],
      },
      { model: 'echo', input: [{ role: 'developer', content: 'x' }, message('hi')] },
      { model: 'echo', input: [message([{ type: 'output_text', text: 'hi', annotations: [] }])] },
      { model: 'echo' },
      { input: 'hi' },
      { model: 42, input: 'hi' },
      { model: 'echo', input: 42 },
      { model: 'echo', input: null },
      { model: 'echo', input: [] },
      { model: 'echo', input: ['hi'] },
      { model: 'echo', input: [{ content: 'hi' }] },
      { model: 'echo', input: [{ role: 'tool', content: 'hi' }] },
      { model: 'echo', input: [message(42)] },
      { model: 'echo', input: [message([{ type: 'input_image', image_url: 'https://example.com/a.png' }])] },
      { model: 'echo', input: [message([{ type: 'input_text' }])] },
      { model: 'echo', input: [message('hi', { type: 'function_call_output' })] },
      { model: 'echo', input: 'hi', background: 'yes' },
      { model: 'echo', input: 'hi', instructions: 5 },
      { model: 'echo', input: 'hi', stream: true },
      { model: 'echo', input: 'hi', tools: [{ type: 'function', name: 'f' }] },
      { model: 'echo', input: 'hi', previous_response_id: 'resp_x' },
      { model: 'echo', input: 'hi', conversation: 'conv_x' },
      { model: 'echo', input: 'hi', prompt: { id: 'pmpt_x' } },
      // Tools, formats and settings.
      { model: 'gpt', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: { type: 'object' } }] },
      { model: 'gpt', input: 'hi', tools: [{ type: 'function', name: 'f' }], tool_choice: 'required' },
      {
        model: 'gpt',
        input: 'hi',
        tools: [{ type: 'function', name: 'f' }],
        tool_choice: { type: 'function', name: 'f' },
      },
      { model: 'gpt', input: 'hi', tools: [{ type: 'web_search' }] },
      { model: 'gpt', input: 'hi', tools: [{ type: 'function', name: 'a b' }] },
      { model: 'gpt', input: 'hi', tools: [{ type: 'function', name: 'x'.repeat(65) }] },
      { model: 'gpt', input: 'hi', tools: [{ type: 'function', name: 'f', parameters: 'x' }] },
      { model: 'gpt', input: 'hi', tool_choice: 'sometimes' },
      { model: 'gpt', input: 'hi', text: { format: { type: 'json_schema', name: 'n', schema: {}, strict: true } } },
      { model: 'gpt', input: 'hi', text: { format: { type: 'json_object' } } },
      { model: 'gpt', input: 'hi', text: { format: { type: 'json_schema', name: 'n' } } },
      { model: 'gpt', input: 'hi', text: { format: { type: 'xml' } } },
      { model: 'gpt', input: 'hi', text: { verbosity: 'low' } },
      { model: 'gpt', input: 'hi', text: { format: null, verbosity: null } },
      {
        model: 'gpt',
        input: 'hi',
        temperature: 2,
        top_p: 0,
        max_output_tokens: 1,
        user: 'u',
        parallel_tool_calls: true,
      },
      { model: 'gpt', input: 'hi', temperature: 2.5 },
      { model: 'gpt', input: 'hi', top_p: 1.5 },
      { model: 'gpt', input: 'hi', max_output_tokens: 0 },
      { model: 'gpt', input: 'hi', top_logprobs: 0, include: ['reasoning.encrypted_content'] },
      { model: 'gpt', input: 'hi', top_logprobs: 3 },
      { model: 'gpt', input: 'hi', include: ['message.output_text.logprobs'] },
      { model: 'gpt', input: 'hi', max_tool_calls: 1 },
      { model: 'gpt', input: 'hi', stream: 'yes' },
      // Items of a tool round trip.
      {
        model: 'gpt',
        input: [
          message('hi'),
          { type: 'function_call', call_id: 'c', name: 'f', arguments: '{}', id: 'fc_1', status: 'completed' },
          { type: 'function_call_output', call_id: 'c', output: 'ok' },
        ],
      },
      { model: 'gpt', input: [{ type: 'function_call', call_id: 'c', name: 'f' }] },
      { model: 'gpt', input: [{ type: 'function_call', call_id: '', name: 'f', arguments: '{}' }] },
      { model: 'gpt', input: [{ type: 'reasoning', id: 'rs_1', summary: [] }] },
      { model: 'gpt', input: [{ type: 'item_reference' }] },
      [],
      'hello',
      null,
    ];
    for (const body of bodies)
      expect(validate(body), JSON.stringify(body)).toBe(!(parseResponsesCreate(body) instanceof InvalidRequest));
    // Rules across fields are the parser's alone: an output names a call before it; a reference names an item airs
    // has (the parser is given none here).
    const orphan = { model: 'gpt', input: [{ type: 'function_call_output', call_id: 'c', output: 'x' }] };
    expect(validate(orphan)).toBe(true);
    expect(parseResponsesCreate(orphan)).toBeInstanceOf(InvalidRequest);
    expect(validate({ model: 'gpt', input: [{ type: 'item_reference', id: 'msg_1' }] })).toBe(true);
  });

  it('describes the POST /v1/batches body as the zod schema the route parses it with', () => {
    const document = openApiDocument() as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
      components: { schemas: Record<string, { required?: string[]; properties: Record<string, { enum?: unknown }> }> };
    };
    expect(document.paths['/v1/batches']?.post?.requestBody?.content['application/json']?.schema).toEqual({
      $ref: '#/components/schemas/BatchCreate',
    });
    const schema = document.components.schemas.BatchCreate;
    expect(schema?.required?.sort()).toEqual(['completion_window', 'endpoint', 'input_file_id']);
    expect(schema?.properties.endpoint?.enum).toEqual([...batchEndpointPaths]);
    expect(schema?.properties.endpoint?.enum).toEqual(batchEndpoints.endpoints);
    expect(schema?.properties.completion_window?.enum).toEqual(['24h']);
    const validate = new Ajv2020().compile(schema as object);
    for (const body of batchCreateBodies('file-abc'))
      expect(validate(body), JSON.stringify(body)).toBe(batchCreateBodySchema.safeParse(body).success);
  });

  it('describes the upload form of POST /v1/files, which the route reads by hand', () => {
    const document = openApiDocument() as {
      paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>;
      components: { schemas: Record<string, object> };
    };
    expect(Object.keys(document.paths['/v1/files']?.post?.requestBody?.content ?? {})).toEqual(['multipart/form-data']);
    const validate = new Ajv2020().compile(document.components.schemas.FileUpload as object);
    const file = 'bytes';
    expect(validate({ file, purpose: 'batch' })).toBe(true);
    expect(
      validate({ file, purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': 3600 }),
    ).toBe(true);
    expect(validate({ purpose: 'batch' })).toBe(false);
    expect(validate({ file })).toBe(false);
    expect(validate({ file, purpose: 'fine-tune' })).toBe(false);
    expect(validate({ file, purpose: 'batch', 'expires_after[anchor]': 'created_at' })).toBe(false);
    expect(validate({ file, purpose: 'batch', 'expires_after[anchor]': 'now', 'expires_after[seconds]': 3600 })).toBe(
      false,
    );
    expect(
      validate({ file, purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': 60 }),
    ).toBe(false);
  });

  it('documents the Idempotency-Key and Cancel-After headers on every submit route', () => {
    const document = openApiDocument() as {
      paths: Record<string, Record<string, { parameters?: unknown[] }>>;
      components: { parameters: Record<string, { in: string; schema: { pattern: string } }> };
    };
    const references = [
      { $ref: '#/components/parameters/Idempotency-Key' },
      { $ref: '#/components/parameters/Cancel-After' },
    ];
    for (const path of ['/v1/ai', '/v1/responses', '/v1/chat/completions'])
      expect(document.paths[path]?.post?.parameters).toEqual(references);
    expect(document.components.parameters['Cancel-After']?.in).toBe('header');
    const parameter = document.components.parameters['Idempotency-Key'];
    expect(parameter?.in).toBe('header');
    const pattern = new RegExp(parameter?.schema.pattern ?? '');
    expect(['a', '6f1d9a52-5b8e-4c1e-9d7a-2f0c3b4a5e61', '~'.repeat(255)].every((key) => pattern.test(key))).toBe(true);
    expect(['', 'a b', 'é', 'x'.repeat(256)].some((key) => pattern.test(key))).toBe(false);
  });

  it('documents a webhook for every event type: its signed POST body, the Standard Webhooks headers, and a 2xx within 10 s as its acknowledgement', () => {
    type Operation = {
      tags: string[];
      parameters: { $ref: string }[];
      requestBody: { required: boolean; content: Record<string, { schema: { $ref: string } }> };
      responses: Record<string, { description: string }>;
    };
    const document = openApiDocument() as {
      webhooks: Record<string, { post?: Operation }>;
      components: {
        schemas: Record<string, object>;
        parameters: Record<string, { name: string; in: string; required: boolean; schema: object }>;
      };
    };
    expect(Object.keys(document.webhooks)).toEqual([...webhookEventTypes]);
    const ajv = new Ajv2020({ strict: true });
    const reqId = `req_${'a'.repeat(34)}`;
    const sources = { response: reqId, batch: `batch_${'b'.repeat(34)}`, request: reqId };
    const secret = newWebhookSecret();
    for (const type of webhookEventTypes) {
      const operation = document.webhooks[type]?.post;
      expect(operation, type).toBeDefined();
      if (operation === undefined) continue;
      expect(Object.keys(document.webhooks[type] ?? {}), type).toEqual(['post']);
      expect(operation.tags).toEqual(['Webhooks']);
      expect(operation.responses['2XX']?.description, type).toMatch(/2xx answered within 10 seconds/);
      expect(Object.keys(operation.responses), type).toEqual(['2XX', 'default']);
      // The body: a real delivery's, as the sender makes it, is valid; one about another type is not.
      expect(operation.requestBody.required).toBe(true);
      const schemaRef = operation.requestBody.content['application/json']?.schema.$ref ?? '';
      const schema = document.components.schemas[schemaRef.replace('#/components/schemas/', '')];
      expect(schema, type).toBeDefined();
      const validate = ajv.compile(schema as object);
      const family = type.slice(0, type.indexOf('.')) as keyof typeof sources;
      const source = sources[family];
      const dataId = family === 'response' ? `resp_${source.slice('req_'.length)}` : source;
      const eventId = webhookEventId(source, type);
      const body = webhookBody(envelopeEventOf({ eventId, eventType: type, dataId, createdAt: 1_767_225_600_000 }));
      expect(validate(JSON.parse(body)), `${type}: ${JSON.stringify(validate.errors)}`).toBe(true);
      const other = webhookEventTypes.find((t) => t !== type) ?? type;
      expect(validate({ ...JSON.parse(body), type: other }), type).toBe(false);
      expect(validate({ ...JSON.parse(body), data: { id: 'x' } }), type).toBe(false);
      // The headers: the three of Standard Webhooks, required, and a real signature (two during a rotation) fits.
      expect(operation.parameters.map((p) => p.$ref)).toEqual([
        '#/components/parameters/webhook-id',
        '#/components/parameters/webhook-timestamp',
        '#/components/parameters/webhook-signature',
      ]);
      const signed = signWebhook({
        id: webhookDeliveryId(eventId, `whep_${'E'.repeat(16)}`),
        timestampMs: Date.now(),
        body,
        secrets: [secret, newWebhookSecret()],
      });
      for (const [name, value] of Object.entries(signed)) {
        const parameter = document.components.parameters[name];
        expect(parameter, name).toMatchObject({ name, in: 'header', required: true });
        expect(ajv.validate(parameter?.schema as object, value), `${name}: ${value}`).toBe(true);
      }
    }
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
    const queued = { req_id: reqId, status: 'queued', model: 'echo', created_at: 1, service_tier: 'default' };
    expect(problems({ ...poll, body: queued })).toEqual([]);
    // Where a waiting request stands (contract 20): a whole number from 0 to 10,000.
    expect(problems({ ...poll, body: { ...queued, queue_position: 0 } })).toEqual([]);
    expect(problems({ ...poll, body: { ...queued, queue_position: 10_000 } })).toEqual([]);
    for (const wrong of [-1, 10_001, 1.5, '3'])
      expect(problems({ ...poll, body: { ...queued, queue_position: wrong } }), String(wrong)).not.toEqual([]);
    expect(
      problems({ ...poll, body: { req_id: reqId, status: 'completed', model: 'echo', created_at: 1 } }).join(),
    ).toMatch(/response/);
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

    // The OpenAI face: its Response object, and OpenAI's error shape rather than the contract's.
    const response = {
      id: `resp_${'a'.repeat(22)}`,
      object: 'response',
      created_at: 1_800_000_000,
      status: 'queued',
      completed_at: null,
      model: 'echo',
      output: [],
      background: true,
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      metadata: {},
      parallel_tool_calls: true,
      temperature: null,
      text: { format: { type: 'text' } },
      tool_choice: 'auto',
      tools: [],
      top_p: null,
      user: null,
      usage: null,
      service_tier: 'default',
    };
    const create = { method: 'POST', path: '/v1/responses', status: 200, headers: headers(limits), body: response };
    expect(problems(create)).toEqual([]);
    expect(problems({ ...create, body: { ...response, status: 'done' } }).join()).toMatch(/status/);
    expect(problems({ ...create, body: { ...response, id: `req_${'a'.repeat(22)}` } }).join()).toMatch(/id/);
    expect(problems({ ...create, body: { ...response, usage: { total_tokens: 3 } } }).join()).toMatch(/usage/);
    const failure = { code: 'server_error', message: 'failed', type: 'server_error', param: null };
    expect(problems({ ...create, body: { ...response, status: 'failed', error: failure } })).toEqual([]);
    expect(
      problems({ ...create, body: { ...response, status: 'failed', error: { code: 'server_error', message: 'x' } } }),
    ).not.toEqual([]);
    // A stream is checked event by event against the events' schema.
    const streamed = { ...create, headers: new Headers({ ...limits, 'content-type': 'text/event-stream' }) };
    const created = { type: 'response.created', response, sequence_number: 0 };
    const sse = (...events: unknown[]) => events.map((e) => `event: x\ndata: ${JSON.stringify(e)}\n\n`).join('');
    expect(problems({ ...streamed, body: undefined, text: `: keep-alive\n\n${sse(created)}` })).toEqual([]);
    expect(problems({ ...streamed, body: undefined, text: sse({ ...created, sequence_number: -1 }) })).not.toEqual([]);
    expect(problems({ ...streamed, body: undefined, text: sse({ type: 'response.done', response }) })).not.toEqual([]);
    expect(problems({ ...streamed, body: undefined, text: 'data: {' })).not.toEqual([]);
    expect(problems({ ...create, body: { request_id: `req_${'a'.repeat(22)}`, model: 'echo' } })).not.toEqual([]);
    const openAiError = {
      error: { message: 'input: is required', type: 'invalid_request_error', param: 'input', code: 'invalid_request' },
    };
    expect(problems({ ...create, status: 400, body: openAiError })).toEqual([]);
    expect(
      problems({ ...create, status: 400, body: { error: { code: 'invalid_request', message: 'input: is required' } } }),
    ).not.toEqual([]);
    expect(
      problems({ ...create, status: 400, body: { error: { ...openAiError.error, type: 'invalid_request' } } }),
    ).not.toEqual([]);
    const models = { method: 'GET', path: '/v1/models', status: 200, headers: headers(polls) };
    const model = { id: 'echo', object: 'model', created: 1_800_000_000, owned_by: 'airs' };
    expect(problems({ ...models, body: { object: 'list', data: [model] } })).toEqual([]);
    expect(problems({ ...models, body: [model] })).not.toEqual([]);
    expect(problems({ ...models, body: { object: 'list', data: [{ ...model, created: 'today' }] } })).not.toEqual([]);
  });

  describe.each(transports)('the OpenAI-compatible face, $name', (transport) => {
    let app: TestApp;
    afterEach(() => app.stop());

    it('answers what the document says: models, a background and a waiting create, retrieve, cancel and their errors', async () => {
      app = await startTestApp({ config: contractConfig, clock: systemClock });
      const { key } = await app.account('free');
      let close = async () => {};
      let fetcher = async (path: string, init: RequestInit) => app.http.request(`http://airs.test${path}`, init);
      if (transport.name !== 'in-process') {
        const server = await listen(app);
        close = server.close;
        fetcher = (path, init) => fetch(server.url + path, init);
      }
      // The checker looks paths up as they are: a called path with an id is given its template's operations.
      const templates: Record<string, string> = {};
      const call = async (method: string, path: string, init: Parameters<typeof requestInit>[1] = {}) => {
        const answer = await fetcher(path, requestInit(method, init));
        const text = await answer.text();
        const streamed = answer.headers.get('content-type')?.startsWith('text/event-stream') === true;
        const body = (streamed ? {} : JSON.parse(text)) as Record<string, unknown>;
        const document = openApiDocument() as { paths: Record<string, unknown> };
        // Checked under a name without `%`, which ajv would read as percent-encoding in its JSON pointers.
        const pathname = new URL(path, 'http://airs.test').pathname.replaceAll('%', '_');
        const template = templates[pathname];
        if (template !== undefined) document.paths = { ...document.paths, [pathname]: document.paths[template] };
        const observed = { method, path: pathname, status: answer.status, headers: answer.headers, body, text };
        expect(openApiChecker(document).problems(observed), `${method} ${path}: ${text}`).toEqual([]);
        return observed;
      };
      const known = (id: string) => {
        templates[`/v1/responses/${id}`] = '/v1/responses/{id}';
        templates[`/v1/responses/${id}/cancel`] = '/v1/responses/{id}/cancel';
      };
      known('resp_unknown');
      known('_E0_A4_A');
      templates['/v1/models/echo'] = '/v1/models/{id}';
      templates['/v1/models/gpt-9'] = '/v1/models/{id}';
      try {
        expect((await call('GET', '/v1/models', { key })).status).toBe(200);
        expect((await call('GET', '/v1/models/echo', { key })).status).toBe(200);
        expect((await call('GET', '/v1/models/gpt-9', { key })).status).toBe(404);

        const slowBody = { model: 'slow', input: 'to be cancelled', background: true };
        const idempotency = { 'idempotency-key': 'openapi-test-1' };
        const queued = await call('POST', '/v1/responses', { key, body: slowBody, headers: idempotency });
        expect(queued.status).toBe(200);
        expect(queued.body.status).toBe('queued');
        const slowId = String(queued.body.id);
        known(slowId);
        const replayed = await call('POST', '/v1/responses', { key, body: slowBody, headers: idempotency });
        expect(replayed.headers.get('idempotent-replayed')).toBe('true');
        expect(replayed.body.id).toBe(slowId);
        const reused = { key, body: { ...slowBody, input: 'another' }, headers: idempotency };
        expect((await call('POST', '/v1/responses', reused)).status).toBe(422);

        const waited = await call('POST', '/v1/responses', {
          key,
          body: {
            model: 'echo',
            instructions: 'be brief',
            input: [{ role: 'user', content: [{ type: 'input_text', text: 'hi' }] }],
          },
        });
        expect(waited.body).toMatchObject({ status: 'completed', output: [{ content: [{ text: 'hi' }] }] });
        known(String(waited.body.id));

        expect((await call('GET', `/v1/responses/${slowId}`, { key })).status).toBe(200);
        expect((await call('POST', `/v1/responses/${slowId}/cancel`, { key })).body.status).toBe('cancelled');
        expect((await call('POST', `/v1/responses/${slowId}/cancel`, { key })).body.status).toBe('cancelled');
        expect((await call('POST', `/v1/responses/${String(waited.body.id)}/cancel`, { key })).status).toBe(400);
        expect((await call('GET', '/v1/responses/resp_unknown', { key })).status).toBe(404);
        expect((await call('POST', '/v1/responses/resp_unknown/cancel', { key })).status).toBe(404);
        expect((await call('GET', '/v1/responses/%E0%A4%A', { key })).status).toBe(400);

        // A model that always times out (one attempt): the Response ends `failed`, with its `error`.
        const doomed = await call('POST', '/v1/responses', {
          key,
          body: { model: 'doomed', input: 'x', background: true },
        });
        known(String(doomed.body.id));
        const failed = await eventually(async () => {
          const answer = await call('GET', `/v1/responses/${String(doomed.body.id)}`, { key });
          return answer.body.status === 'failed' ? answer : undefined;
        });
        expect(failed.body.error).toMatchObject({ code: 'server_error' });

        expect((await call('POST', '/v1/responses', { body: slowBody })).status).toBe(401);
        expect((await call('POST', '/v1/responses', { key, body: { model: 'echo', input: 5 } })).body).toMatchObject({
          error: { param: 'input', code: 'invalid_request' },
        });
        // Streams: a create, a replay from an event on, and a failed request's.
        const streamedCreate = await call('POST', '/v1/responses', {
          key,
          body: { model: 'echo', input: 'hi', stream: true },
        });
        expect(streamedCreate.text).toMatch(/event: response\.completed/);
        const streamedId = /"id":"(resp_[A-Za-z0-9_-]+)"/.exec(streamedCreate.text)?.[1] ?? '';
        known(streamedId);
        const replay = await call('GET', `/v1/responses/${streamedId}?stream=true&starting_after=2`, { key });
        expect(replay.text).toMatch(/^event: response\.content_part\.added/);
        const failedStream = await call('POST', '/v1/responses', {
          key,
          body: { model: 'doomed', input: 'x', stream: true },
        });
        expect(failedStream.text).toMatch(/event: response\.failed/);
        known(/"id":"(resp_[A-Za-z0-9_-]+)"/.exec(failedStream.text)?.[1] ?? '');
        expect((await call('GET', `/v1/responses/${streamedId}?starting_after=2`, { key })).status).toBe(400);
        const tools = [{ type: 'function', name: 'f', parameters: { type: 'object' } }];
        expect((await call('POST', '/v1/responses', { key, body: { ...slowBody, tools } })).body).toMatchObject({
          error: { param: 'tools' },
        });
        expect((await call('POST', '/v1/responses', { key, body: 'x'.repeat(2000) })).status).toBe(413);
      } finally {
        await close();
      }
    });
  });

  describe.each(transports)('OpenAI’s Files and Batches, $name', (transport) => {
    let app: TestApp;
    afterEach(() => app.stop());

    it('answers what the document says: upload, list, retrieve, download, delete, create, cancel and their errors; and refuses the create bodies the document refuses', async () => {
      app = await startTestApp({ config: contractConfig, clock: systemClock });
      const { key } = await app.account('enterprise');
      let close = async () => {};
      let fetcher = async (path: string, init: RequestInit) => app.http.request(`http://airs.test${path}`, init);
      if (transport.name !== 'in-process') {
        const server = await listen(app);
        close = server.close;
        fetcher = (path, init) => fetch(server.url + path, init);
      }
      const document = openApiDocument() as { paths: Record<string, unknown> };
      // The checker looks paths up as they are: a called path with an id is given its template's operations.
      const templated = (pathname: string) =>
        pathname
          .replace(/^\/v1\/files\/[^/]+/, '/v1/files/{id}')
          .replace(/^\/v1\/batches\/(?!\{id\})[^/]+/, '/v1/batches/{id}');
      const call = async (method: string, path: string, init: RequestInit = {}) => {
        const answer = await fetcher(path, { ...init, method });
        const text = await answer.text();
        const json = answer.headers.get('content-type')?.startsWith('application/json') === true;
        const body = (json ? JSON.parse(text) : undefined) as Record<string, unknown>;
        const pathname = new URL(path, 'http://airs.test').pathname;
        const template = templated(pathname);
        const checked = { ...document, paths: { ...document.paths, [pathname]: document.paths[template] } };
        const observed = { method, path: pathname, status: answer.status, headers: answer.headers, body, text };
        expect(document.paths[template], `${method} ${template} is documented`).toBeDefined();
        expect(openApiChecker(checked).problems(observed), `${method} ${path}: ${text}`).toEqual([]);
        return observed;
      };
      const authorized = { authorization: `Bearer ${key}` };
      const upload = (fields: Record<string, string>, content: string) => {
        const form = new FormData();
        for (const [name, value] of Object.entries(fields)) form.append(name, value);
        form.append('file', new Blob([content]), 'lines.jsonl');
        return call('POST', '/v1/files', { headers: authorized, body: form });
      };
      const json = (body: unknown): RequestInit => ({
        headers: { ...authorized, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      try {
        const line = {
          custom_id: 'c0',
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: 'echo', messages: [{ role: 'user', content: 'hi' }] },
        };
        const jsonl = `${JSON.stringify(line)}\n`;
        const uploaded = await upload(
          { purpose: 'batch', 'expires_after[anchor]': 'created_at', 'expires_after[seconds]': '3600' },
          jsonl,
        );
        expect(uploaded.status).toBe(200);
        const fileId = String(uploaded.body.id);
        expect((await upload({ purpose: 'fine-tune' }, jsonl)).body).toMatchObject({ error: { param: 'purpose' } });
        expect((await call('POST', '/v1/files', { body: new FormData() })).status).toBe(401);

        expect((await call('GET', '/v1/files?order=asc&limit=5', { headers: authorized })).body).toMatchObject({
          object: 'list',
          data: [{ id: fileId }],
        });
        expect((await call('GET', '/v1/files?limit=0', { headers: authorized })).status).toBe(400);
        expect((await call('GET', `/v1/files/${fileId}`, { headers: authorized })).body).toMatchObject({ id: fileId });
        const content = await call('GET', `/v1/files/${fileId}/content`, { headers: authorized });
        expect(content.text).toBe(jsonl);
        expect((await call('GET', '/v1/files/file-unknown', { headers: authorized })).status).toBe(404);
        expect((await call('GET', '/v1/files/file-unknown/content', { headers: authorized })).status).toBe(404);

        // Each body: the route takes exactly those the document's schema takes.
        const validate = new Ajv2020().compile(
          (openApiDocument() as { components: { schemas: { BatchCreate: object } } }).components.schemas.BatchCreate,
        );
        const batchIds: string[] = [];
        for (const body of batchCreateBodies(fileId)) {
          const created = await call('POST', '/v1/batches', json(body));
          expect(created.status, `${JSON.stringify(body)}: ${created.text}`).toBe(validate(body) ? 200 : 400);
          if (created.status === 200) batchIds.push(String(created.body.id));
        }
        expect(batchIds.length).toBeGreaterThan(0);
        const unknownFile = { input_file_id: 'file-unknown', endpoint: '/v1/responses', completion_window: '24h' };
        expect((await call('POST', '/v1/batches', json(unknownFile))).status).toBe(404);

        const listed = await call('GET', '/v1/batches?limit=2', { headers: authorized });
        expect(listed.body).toMatchObject({ object: 'list', has_more: batchIds.length > 2 });
        expect((await call('GET', '/v1/batches?limit=101', { headers: authorized })).status).toBe(400);
        const batchId = batchIds[0] as string;
        expect((await call('GET', `/v1/batches/${batchId}`, { headers: authorized })).body).toMatchObject({
          id: batchId,
          object: 'batch',
        });
        expect((await call('POST', `/v1/batches/${batchId}/cancel`, { headers: authorized })).status).toBe(200);
        expect((await call('GET', '/v1/batches/batch_unknown', { headers: authorized })).status).toBe(404);
        expect((await call('POST', '/v1/batches/batch_unknown/cancel', { headers: authorized })).status).toBe(404);

        expect((await call('DELETE', `/v1/files/${fileId}`, { headers: authorized })).body).toEqual({
          id: fileId,
          object: 'file',
          deleted: true,
        });
        expect((await call('DELETE', `/v1/files/${fileId}`, { headers: authorized })).status).toBe(404);
      } finally {
        await close();
      }
    });
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
