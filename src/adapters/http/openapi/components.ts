import { z } from 'zod';
import { headerSchemas } from '../wireFormat.js';

/**
 * What every part of the OpenAPI document builds with: a zod schema as JSON Schema, `$ref`s, the response headers
 * and their presence, JSON and event-stream contents, error answers, and the shared request parameters.
 */

export type Json = Record<string, unknown>;

/** A zod schema as a JSON Schema (2020-12) without its `$schema` line: OpenAPI 3.1 declares the dialect once. */
export const jsonSchema = (schema: z.ZodType, io: 'input' | 'output' = 'output'): Json => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'throw' });
  return rest;
};

export const ref = (kind: 'schemas' | 'headers' | 'responses' | 'parameters', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

export const headers = {
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
  'X-Request-Id': {
    description: 'The request’s id (`req_…`), as `/v1/ai`, `airs replay` and the dashboard name it.',
    schema: z.string().regex(/^req_[A-Za-z0-9_-]{22,}$/),
  },
  'Preference-Applied': {
    description:
      '`wait=N` on a poll sent with `Prefer: wait=N`: the answer is the wait’s (the request is final, or `N` seconds ' +
      'passed; `N` as applied, at most `http.maxPollWaitSeconds`). Absent: the poll was answered at once.',
    schema: z.string().regex(/^wait=\d+$/),
  },
  'X-Should-Retry': {
    description:
      '`false` on a request that failed for good: airs retried it already, so a client retry would only make ' +
      'another request that fails alike (the official OpenAI SDKs honour it).',
    schema: z.enum(['false']),
  },
} as const;

export const headerObject = (name: keyof typeof headers) => ({
  description: headers[name].description,
  schema: jsonSchema(headers[name].schema),
});

/** A response's headers: OpenAPI puts `required` on the header object, so a required one is written out in full. */
export const responseHeaders = (names: Readonly<Partial<Record<keyof typeof headers, 'required' | 'optional'>>>) =>
  Object.fromEntries(
    Object.entries(names).map(([name, presence]) => [
      name,
      presence === 'required'
        ? { ...headerObject(name as keyof typeof headers), required: true }
        : ref('headers', name),
    ]),
  );

export const rateLimited = { 'RateLimit-Policy': 'required', RateLimit: 'required' } as const;
export const rateLimitedIfAdmitted = { 'RateLimit-Policy': 'optional', RateLimit: 'optional' } as const;

export const jsonContent = (schemaName: string) => ({ 'application/json': { schema: ref('schemas', schemaName) } });

/**
 * A stream of server-sent events. OpenAPI 3.1 has no keyword for the events of a stream: the schema of each event's
 * `data` is given in `x-event-data` (the checker in test/http/support/openapi.ts validates every event with it).
 */
export const eventStreamContent = (eventSchemaName: string, description: string) => ({
  'text/event-stream': {
    schema: { type: 'string', description },
    'x-event-data': ref('schemas', eventSchemaName),
  },
});

export const errorAnswer = (
  description: string,
  names: Parameters<typeof responseHeaders>[0] = {},
  schemaName: 'Error' | 'OpenAIError' = 'Error',
) => ({
  description,
  headers: responseHeaders(names),
  content: jsonContent(schemaName),
});

export const headersTooLarge = () =>
  errorAnswer('Request headers larger than Node’s parser accepts (answered before the app).');

export const requestTimedOut = () =>
  errorAnswer(
    'The request’s headers did not arrive within `http.headersTimeoutSeconds` (20), or the whole request within ' +
      '`http.requestTimeoutSeconds` (60); answered before the app, and the connection closed.',
  );

export const bearer = [{ bearerAuth: [] }];

export const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the submit safe to retry: within 24 hours, a repeat from the same account with the same key and ' +
    'body answers the first request (`Idempotent-Replayed: true`) and creates nothing.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};

export const cancelAfter = {
  name: 'Cancel-After',
  in: 'header',
  required: false,
  description:
    'A deadline: the request is cancelled if it has not ended this long after its creation (never started if it ' +
    'is still queued, its upstream call aborted if it runs), with reason `deadline`. Seconds (`90`, `30s`), minutes ' +
    '(`5m`) or hours (`2h`), from 1 second to the request lifetime (`requestTtlSeconds`); anything else answers ' +
    '`400 invalid_request` naming the header.',
  schema: { type: 'string', pattern: '^[0-9]{1,12}[smh]?$' },
};
