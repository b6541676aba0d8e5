import { z } from 'zod';
import { submissionBodySchema } from '../../app/submission.js';
import {
  acceptedSchema,
  type errorCodes,
  errorSchema,
  headerSchemas,
  pollSchema,
  probeSchema,
} from '../../app/wireFormat.js';
import { answer, type ErrorCode, jsonHeaders } from './errorResponse.js';

/**
 * The OpenAPI 3.1 document of the `/v1` routes (and the probes), generated from the zod schemas the code uses
 * (zod 4's JSON Schema output, draft 2020-12, the dialect of OpenAPI 3.1). Served at `GET /v1/openapi.json`, and
 * committed as `docs/openapi.json`: test/http/openapi.test.ts fails when the two differ (`npm run openapi` rewrites
 * the file).
 */

type Json = Record<string, unknown>;

/** A zod schema as a JSON Schema (2020-12) without its `$schema` line: OpenAPI 3.1 declares the dialect once. */
const jsonSchema = (schema: z.ZodType, io: 'input' | 'output' = 'output'): Json => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'throw' });
  return rest;
};

const ref = (kind: 'schemas' | 'headers' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

const headers = {
  'RateLimit-Policy': { description: 'The budget this call spent from.', schema: headerSchemas.rateLimitPolicy },
  RateLimit: { description: 'What is left of that budget.', schema: headerSchemas.rateLimit },
  'Retry-After': { description: 'Whole seconds to wait before trying again.', schema: headerSchemas.retryAfter },
  Location: { description: 'The poll URL of the new request.', schema: headerSchemas.location },
  'WWW-Authenticate': { description: 'Always `Bearer`.', schema: headerSchemas.wwwAuthenticate },
  Allow: { description: 'The methods of the path.', schema: headerSchemas.allow },
  'Idempotent-Replayed': {
    description: '`true` when an earlier submit with the same `Idempotency-Key` and body made this request.',
    schema: headerSchemas.idempotentReplayed,
  },
} as const;

const headerObject = (name: keyof typeof headers) => ({
  description: headers[name].description,
  schema: jsonSchema(headers[name].schema),
});

/** A response's headers: OpenAPI puts `required` on the header object, so a required one is written out in full. */
const responseHeaders = (names: Readonly<Partial<Record<keyof typeof headers, 'required' | 'optional'>>>) =>
  Object.fromEntries(
    Object.entries(names).map(([name, presence]) => [
      name,
      presence === 'required'
        ? { ...headerObject(name as keyof typeof headers), required: true }
        : ref('headers', name),
    ]),
  );

const rateLimited = { 'RateLimit-Policy': 'required', RateLimit: 'required' } as const;
const rateLimitedIfAdmitted = { 'RateLimit-Policy': 'optional', RateLimit: 'optional' } as const;

const jsonContent = (schemaName: string) => ({ 'application/json': { schema: ref('schemas', schemaName) } });

const errorAnswer = (description: string, names: Parameters<typeof responseHeaders>[0] = {}) => ({
  description,
  headers: responseHeaders(names),
  content: jsonContent('Error'),
});

const stopping = () =>
  errorAnswer(
    'The server is stopping (`Retry-After: 5`, `Connection: close`), or its write queue is full (`Retry-After: 1`): ' +
      'nothing was created; try again.',
    { 'Retry-After': 'required' },
  );

const headersTooLarge = () =>
  errorAnswer('Request headers larger than Node’s parser accepts (answered before the app).');

const bearer = [{ bearerAuth: [] }];

const build = (): Json => ({
  openapi: '3.1.0',
  info: {
    title: 'airs: asynchronous AI request service',
    version: '1.0.0',
    description:
      'Submit a prompt, poll for the result. Every `/v1/ai` call needs `Authorization: Bearer <key>`; every ' +
      'authenticated answer carries the IETF draft `RateLimit-Policy` and `RateLimit` headers. Every error has ' +
      'one shape (`Error`). Any other method on `/v1/ai` answers `405 method_not_allowed` with ' +
      '`Allow: GET, POST`; any unknown path answers `404 not_found`. See docs/api.md.',
    license: { name: 'MIT', identifier: 'MIT' },
  },
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  paths: {
    '/v1/ai': {
      post: {
        operationId: 'submitRequest',
        summary: 'Submit a prompt',
        security: bearer,
        parameters: [
          {
            name: 'Idempotency-Key',
            in: 'header',
            required: false,
            description:
              'Makes the submit safe to retry: within 24 hours, a repeat from the same account with the same key and ' +
              'body answers the first request (`Idempotent-Replayed: true`) and creates nothing.',
            schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
          },
        ],
        requestBody: { required: true, content: jsonContent('SubmitRequest') },
        responses: {
          '202': {
            description: 'Accepted, and durably on disk: poll the `Location`.',
            headers: responseHeaders({ Location: 'required', 'Idempotent-Replayed': 'optional', ...rateLimited }),
            content: jsonContent('Accepted'),
          },
          '400': errorAnswer(
            'Malformed JSON, a body that is not an object, `model` or `prompt` missing or not a string, an empty ' +
              'or too long prompt, an unknown model, or a `Content-Type` that is not JSON (with the RateLimit headers); ' +
              'or a request Node or h3 cannot parse (without them).',
            rateLimitedIfAdmitted,
          ),
          '401': errorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked.', {
            'WWW-Authenticate': 'required',
          }),
          '403': errorAnswer('A valid key whose account is suspended.'),
          '413': errorAnswer('The body is larger than `maxBodyBytes`; refused without reading it all.', rateLimited),
          '429': errorAnswer(
            'The account’s submits budget is spent (`details.budget`, `details.retry_after_seconds`).',
            {
              'Retry-After': 'required',
              ...rateLimited,
            },
          ),
          '422': errorAnswer(
            'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
            rateLimited,
          ),
          '431': headersTooLarge(),
          '500': errorAnswer('An unexpected fault (`Retry-After: 30`): retry.', { 'Retry-After': 'optional' }),
          '503': stopping(),
        },
      },
      get: {
        operationId: 'pollRequest',
        summary: 'Poll a request',
        security: bearer,
        parameters: [
          {
            name: 'req_id',
            in: 'query',
            required: true,
            description: 'The `request_id` the submit answered.',
            schema: { type: 'string', minLength: 1 },
          },
        ],
        responses: {
          '200': {
            description: '`queued` (with `Retry-After`: poll again then) or `completed` (with the response).',
            headers: responseHeaders({ 'Retry-After': 'optional', ...rateLimited }),
            content: jsonContent('PollAnswer'),
          },
          '400': errorAnswer(
            '`req_id` missing or empty (with the RateLimit headers), or a request Node or h3 cannot parse (without them).',
            rateLimitedIfAdmitted,
          ),
          '401': errorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked.', {
            'WWW-Authenticate': 'required',
          }),
          '403': errorAnswer('A valid key whose account is suspended.'),
          '404': errorAnswer('Unknown `req_id`, one of another account, or one older than 24 hours.', rateLimited),
          '429': errorAnswer('The account’s polls budget is spent (`details.budget`, `details.retry_after_seconds`).', {
            'Retry-After': 'required',
            ...rateLimited,
          }),
          '431': headersTooLarge(),
          '500': errorAnswer(
            'The request’s processing failed for good: `details.final` is `true` and there is no `Retry-After` ' +
              '(submit again). Or an unexpected fault, with `Retry-After: 30` (retry).',
            { 'Retry-After': 'optional', ...rateLimitedIfAdmitted },
          ),
          '503': stopping(),
        },
      },
    },
    '/v1/openapi.json': {
      get: {
        operationId: 'openApiDocument',
        summary: 'This document',
        security: [],
        responses: { '200': { description: 'The OpenAPI 3.1 document.', content: jsonContent('OpenApiDocument') } },
      },
    },
    '/healthz': {
      get: {
        operationId: 'health',
        summary: 'Liveness probe: 200 while the process runs',
        security: [],
        responses: { '200': { description: '`{"status": "ok"}`', content: jsonContent('Probe') } },
      },
    },
    '/readyz': {
      get: {
        operationId: 'readiness',
        summary: 'Readiness probe: 200 when the service takes work',
        security: [],
        responses: {
          '200': { description: '`{"status": "ready"}`', content: jsonContent('Probe') },
          '503': errorAnswer('Starting, stopping, or the data directory’s disk is under its free-space floor.', {
            'Retry-After': 'required',
          }),
        },
      },
    },
  },
  components: {
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: 'An airs API key: `sk_` and 43 base64url characters.',
      },
    },
    schemas: {
      SubmitRequest: jsonSchema(submissionBodySchema, 'input'),
      Accepted: jsonSchema(acceptedSchema),
      PollAnswer: jsonSchema(pollSchema),
      Error: jsonSchema(errorSchema),
      Probe: jsonSchema(probeSchema),
      OpenApiDocument: jsonSchema(
        z.looseObject({ openapi: z.string().regex(/^3\.1\.\d+$/), info: z.looseObject({}), paths: z.looseObject({}) }),
      ),
    },
    headers: Object.fromEntries(Object.keys(headers).map((name) => [name, headerObject(name as keyof typeof headers)])),
  },
});

let text: string | undefined;

/** The document as served and as committed: two-space JSON and a final newline. */
export const openApiText = (): string => {
  text ??= `${JSON.stringify(build(), null, 2)}\n`;
  return text;
};

export const openApiDocument = (): Json => JSON.parse(openApiText()) as Json;

/** `GET /v1/openapi.json`: no key, no rate limit, served while draining too (it is static). */
export const serveOpenApi = (): Response =>
  answer(200, openApiText(), { ...jsonHeaders, 'Cache-Control': 'public, max-age=300' });

// The error codes of the schema are exactly the ones errorResponse.ts sends.
type Is<T extends true> = T;
export type ErrorCodeChecks = [
  Is<ErrorCode extends (typeof errorCodes)[number] ? true : false>,
  Is<(typeof errorCodes)[number] extends ErrorCode ? true : false>,
];
