import { z } from 'zod';
import { uploadPurposes } from '../../app/batches/Files.js';
import { submissionBodySchema } from '../../app/submission.js';
import { type IdKind, idForms } from '../../domain/identifiers.js';
import { type WebhookEventType, type webhookEnvelope, webhookEventTypes } from '../../domain/webhook/envelope.js';
import { adminPaths, adminSchemas, adminSecurityScheme, adminTag } from './admin/openapi.js';
import { usagePathItem, usageSchemas } from './admin/usageOpenapi.js';
import { answer, type ErrorCode, jsonHeaders } from './errorResponse.js';
import { batchCreateBodySchema, expiresAfterBounds } from './openai/batches/bodies.js';
import { listLimits } from './openai/batches/routes.js';
import type { batchObjectOf, fileObjectOf, listOf } from './openai/batches/wire.js';
import {
  batchListSchema,
  batchObjectSchema,
  fileDeletedSchema,
  fileListSchema,
  fileObjectSchema,
} from './openai/batches/wireFormat.js';
import {
  chatCompletionChunkSchema,
  chatCompletionCreateBodySchema,
  chatCompletionSchema,
} from './openai/chat/wireFormat.js';
import type { modelListOf, modelObjectOf } from './openai/models.js';
import type { responseObjectOf } from './openai/responseObject.js';
import {
  modelListSchema,
  modelObjectSchema,
  openAiErrorSchema,
  responseObjectSchema,
  responseStreamEventSchema,
  responsesCreateBodySchema,
} from './openai/wireFormat.js';
import { acceptedSchema, type errorCodes, errorSchema, headerSchemas, pollSchema, probeSchema } from './wireFormat.js';

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

const ref = (kind: 'schemas' | 'headers' | 'responses' | 'parameters', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

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
/** What a submit's 429 may also be (contract 21): the account's token limits. */
const tokenLimitWords =
  '; or the tokens of its requests that ended in the last 60 s are at its `tokensPerMinute` (code `rate_limited`); ' +
  'or it used its `tokensPerDay` or `tokensPerMonth` budget (code `insufficient_quota`, `X-Should-Retry: false`, ' +
  '`Retry-After` until the budget resets, named in the message)';
const rateLimitedIfAdmitted = { 'RateLimit-Policy': 'optional', RateLimit: 'optional' } as const;

const jsonContent = (schemaName: string) => ({ 'application/json': { schema: ref('schemas', schemaName) } });

/**
 * A stream of server-sent events. OpenAPI 3.1 has no keyword for the events of a stream: the schema of each event's
 * `data` is given in `x-event-data` (the checker in test/http/support/openapi.ts validates every event with it).
 */
const eventStreamContent = (eventSchemaName: string, description: string) => ({
  'text/event-stream': {
    schema: { type: 'string', description },
    'x-event-data': ref('schemas', eventSchemaName),
  },
});

const errorAnswer = (
  description: string,
  names: Parameters<typeof responseHeaders>[0] = {},
  schemaName: 'Error' | 'OpenAIError' = 'Error',
) => ({
  description,
  headers: responseHeaders(names),
  content: jsonContent(schemaName),
});

/** An error of the OpenAI-compatible face: OpenAI's shape (`OpenAIError`). */
const openAiErrorAnswer = (description: string, names: Parameters<typeof responseHeaders>[0] = {}) =>
  errorAnswer(description, names, 'OpenAIError');

const stopping = () =>
  errorAnswer(
    'The server is stopping (`Retry-After: 5`, `Connection: close`), its write queue is full, or its queue of work ' +
      'grows faster than its workers take it (`processing.maxBacklog`) (`Retry-After: 1` for both): nothing was ' +
      'created; try again.',
    { 'Retry-After': 'required' },
  );

const headersTooLarge = () =>
  errorAnswer('Request headers larger than Node’s parser accepts (answered before the app).');

const requestTimedOut = () =>
  errorAnswer(
    'The request’s headers did not arrive within `http.headersTimeoutSeconds` (20), or the whole request within ' +
      '`http.requestTimeoutSeconds` (60); answered before the app, and the connection closed.',
  );

const bearer = [{ bearerAuth: [] }];

const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description:
    'Makes the submit safe to retry: within 24 hours, a repeat from the same account with the same key and ' +
    'body answers the first request (`Idempotent-Replayed: true`) and creates nothing.',
  schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$' },
};

const cancelAfter = {
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

// ---- The OpenAI-compatible face (contract section 11) ----

const openAi = {
  unauthorized: () =>
    openAiErrorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked (`authentication_error`).', {
      'WWW-Authenticate': 'required',
    }),
  forbidden: () => openAiErrorAnswer('A valid key whose account is suspended (`permission_error`).'),
  /** `longCall`: the route may hold its connection (a stream, a create that waits), so it takes an open call's place. */
  rateLimited: (budget: 'submits' | 'polls', longCall = false) =>
    openAiErrorAnswer(
      `The account’s ${budget} budget is spent (\`rate_limit_error\`, code \`rate_limited\`)` +
        (budget === 'submits' && longCall ? tokenLimitWords : '') +
        (longCall
          ? '; or, for a stream or a create that waits, the account already holds its plan’s `maxOpenCalls` open ' +
            'calls in this server process (the budget was spent all the same).'
          : '.'),
      { 'Retry-After': 'required', ...(longCall ? { 'X-Should-Retry': 'optional' as const } : {}), ...rateLimited },
    ),
  fault: () =>
    openAiErrorAnswer('An unexpected fault (`Retry-After: 30`): retry.', {
      'Retry-After': 'required',
    }),
  stopping: (longCall = false) =>
    openAiErrorAnswer(
      'The server is stopping (`Retry-After: 5`, `Connection: close`), its write queue is full, or its queue of ' +
        'work grows faster than its workers take it (`processing.maxBacklog`) (`Retry-After: 1` for both)' +
        (longCall
          ? ', or, for a stream or a create that waits, the server process holds its share of long-lived calls ' +
            '(`http.maxLongCallsShare` of `http.maxConnections`)'
          : '') +
        ': nothing was created; try again.',
      { 'Retry-After': 'required' },
    ),
  /** A 400 on a path with an id: from the route, or from h3 for a path it cannot parse (OpenAI's shape too). */
  unparsablePath: (description?: string) =>
    openAiErrorAnswer(
      `${description === undefined ? 'A' : `${description} Or a`} path h3 cannot parse (invalid ` +
        'percent-encoding), answered before the route, without the RateLimit headers.',
      rateLimitedIfAdmitted,
    ),
};

const idParameter = (description: string) => ({
  name: 'id',
  in: 'path',
  required: true,
  description,
  schema: { type: 'string', minLength: 1 },
});

const responseIdParameter = idParameter(
  'The `id` of the Response (`resp_…`); the `request_id` of a `/v1/ai` submit (`req_…`) names the same request.',
);

const responseAnswer = (description: string, names: Parameters<typeof responseHeaders>[0]) => ({
  description,
  headers: responseHeaders(names),
  content: jsonContent('Response'),
});

const otherMethods = (allow: string) =>
  `Any other method answers \`405 method_not_allowed\` (OpenAI’s error shape) with \`Allow: ${allow}\`.`;

const chatPaths = {
  '/v1/chat/completions': {
    description: otherMethods('POST'),
    post: {
      operationId: 'createChatCompletion',
      summary: 'Queue a chat completion and wait for it, or stream it (OpenAI-compatible)',
      description:
        'A request like any other (the same accounts, limits, queue, log and expiry): its id is `chatcmpl-X` for ' +
        'the request `req_X`. Without `stream`, the call waits until the request is final and answers the ' +
        '`chat.completion` (a failed or cancelled request answers an error); if the caller goes away first, the ' +
        'request is cancelled. With `stream: true`, answers `chat.completion.chunk` events, then `data: [DONE]`, ' +
        'and cancels the request if the caller goes away. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
      requestBody: { required: true, content: jsonContent('ChatCompletionCreate') },
      responses: {
        '200': {
          description: 'The completion, or its chunks.',
          headers: responseHeaders({ 'X-Request-Id': 'optional', 'Idempotent-Replayed': 'optional', ...rateLimited }),
          content: {
            ...jsonContent('ChatCompletion'),
            'text/event-stream': {
              schema: {
                type: 'string',
                description:
                  'With `stream: true`: the chunks, then `data: [DONE]`; or, when the request fails, is cancelled or ' +
                  'expires, or an attempt breaks after part of its text was sent, a last `data: {"error": ...}` ' +
                  'event in OpenAI’s error shape and no `[DONE]`.',
              },
              'x-event-data': { anyOf: [ref('schemas', 'ChatCompletionChunk'), ref('schemas', 'OpenAIError')] },
            },
          },
        },
        '400': openAiErrorAnswer(
          'Malformed JSON or a body over the JSON bounds; `model` or `messages` missing or of the wrong type; an ' +
            'empty or too long conversation; a part airs cannot send a model; a parameter out ' +
            'of range; `n` other than 1, `logprobs`, `top_logprobs`, a tool that is not a function; tools or a ' +
            'JSON schema on the `echo` provider (named in `param`); a `Content-Type` that is not JSON; an invalid ' +
            '`Idempotency-Key` (with the RateLimit headers). Or a client that closed its connection before its ' +
            'body arrived (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer(
          'A model that does not exist for the account (`model_not_found`: not configured, or not among its ' +
            '`allowedModels`); or the request expired or was cancelled while waited for (with `X-Request-Id`).',
          { 'X-Request-Id': 'optional', ...rateLimited },
        ),
        '413': openAiErrorAnswer(
          'The body is larger than `maxBodyBytes`; refused without reading it all.',
          rateLimited,
        ),
        '422': openAiErrorAnswer(
          'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
          rateLimited,
        ),
        '429': openAi.rateLimited('submits', true),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAiErrorAnswer(
          'The request failed for good (`server_error`, after its retries: `X-Should-Retry: false`, submit it ' +
            'again if it is still wanted); or an unexpected fault (`Retry-After: 30`): retry.',
          { 'X-Should-Retry': 'optional', 'X-Request-Id': 'optional', 'Retry-After': 'optional' },
        ),
        '503': openAi.stopping(true),
      },
    },
  },
} as const;

const openAiPaths = {
  '/v1/models': {
    description: otherMethods('GET'),
    get: {
      operationId: 'listModels',
      summary: 'List the configured models (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      responses: {
        '200': {
          description: 'The configured models. Spends a poll.',
          headers: responseHeaders(rateLimited),
          content: jsonContent('ModelList'),
        },
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
  '/v1/models/{id}': {
    description: otherMethods('GET'),
    get: {
      operationId: 'retrieveModel',
      summary: 'A configured model (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [idParameter('A model id, as `GET /v1/models` lists them.')],
      responses: {
        '200': {
          description: 'The model. Spends a poll.',
          headers: responseHeaders(rateLimited),
          content: jsonContent('Model'),
        },
        '400': openAi.unparsablePath(),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('No model with this id is configured (`not_found`).', rateLimited),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
  '/v1/responses': {
    description: otherMethods('POST'),
    post: {
      operationId: 'createResponse',
      summary: 'Queue a request, in the background, waiting for it, or streaming it (OpenAI-compatible)',
      description:
        'With `background: true`, answers at once with the Response, `queued` (also when a worker took it ' +
        'already); poll `GET /v1/responses/{id}`. Without it, waits until the request is final and answers the ' +
        'Response `completed`, `failed` or `cancelled` (never `queued` or `in_progress`); if the caller goes away ' +
        'first, the request is cancelled. With `stream: true`, answers with ' +
        'the Response’s events (`ResponseStreamEvent`) as they happen, and a keep-alive comment after 10 s without ' +
        'one; a stream that is not `background` cancels its request when the caller goes away. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
      requestBody: { required: true, content: jsonContent('ResponsesCreate') },
      responses: {
        '200': {
          ...responseAnswer('The Response: durably queued (background), or final after waiting; or its events.', {
            'Idempotent-Replayed': 'optional',
            ...rateLimited,
          }),
          content: {
            ...jsonContent('Response'),
            ...eventStreamContent('ResponseStreamEvent', 'With `stream: true`: the Response’s events.'),
          },
        },
        '400': openAiErrorAnswer(
          'Malformed JSON; JSON nested deeper than `maxJsonDepth` (64) or holding more than `maxJsonValues` ' +
            '(100,000) values; a body that is not an object; `model` or `input` missing or of the wrong type; an ' +
            'empty or too long input; a part or item airs cannot send a model; a setting out of ' +
            'range; a tool that is not a function; tools or a JSON schema on the `echo` provider; ' +
            '`previous_response_id`, `conversation`, `prompt`, `text.verbosity`, `max_tool_calls` or log ' +
            'probabilities (named in `param` where the parser knows the field); a `Content-Type` that is not JSON; ' +
            'an invalid `Idempotency-Key` (with the RateLimit headers). Or a client that closed its connection ' +
            'before its body arrived (without them).',
          rateLimitedIfAdmitted,
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer(
          'A model that does not exist for the account (`model_not_found`: not configured, or not among its ' +
            '`allowedModels`); or a waiting create whose request expired (`requestTtlSeconds` passed) before it ' +
            'was final.',
          rateLimited,
        ),
        '413': openAiErrorAnswer(
          'The body is larger than `maxBodyBytes`; refused without reading it all.',
          rateLimited,
        ),
        '422': openAiErrorAnswer(
          'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
          rateLimited,
        ),
        '429': openAi.rateLimited('submits', true),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(true),
      },
    },
  },
  '/v1/responses/{id}': {
    description: `${otherMethods('GET')} \`DELETE\` is not supported: a request expires 24 hours after it was created.`,
    get: {
      operationId: 'retrieveResponse',
      summary: 'Retrieve a Response, or stream its events (OpenAI-compatible)',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [
        responseIdParameter,
        {
          name: 'stream',
          in: 'query',
          required: false,
          description:
            '`true`: the Response’s events (`ResponseStreamEvent`) from the start, until it is final. Text that an ' +
            'attempt writes from after the stream began comes as it is written; otherwise the text comes whole when ' +
            'the request completes.',
          schema: { type: 'string', enum: ['true', 'false'] },
        },
        {
          name: 'starting_after',
          in: 'query',
          required: false,
          description:
            'With `stream=true`: leave out the events whose `sequence_number` is this or lower. The numbers are ' +
            'this stream’s own; a stream of a finished request is the same every time, so a client resumes exactly ' +
            'from the last event it had.',
          schema: { type: 'string', pattern: '^\\d{1,9}$' },
        },
      ],
      responses: {
        '200': {
          ...responseAnswer(
            'The Response, whatever its status (a failed one carries `error`; a cancelled one stays cancelled); or ' +
              'its events. Spends a poll.',
            rateLimited,
          ),
          content: {
            ...jsonContent('Response'),
            ...eventStreamContent('ResponseStreamEvent', 'With `stream=true`: the Response’s events.'),
          },
        },
        '400': openAi.unparsablePath(
          '`stream` not `true` or `false`, or `starting_after` not a whole number or without `stream=true`.',
        ),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('Unknown id, one of another account, or one older than 24 hours.', rateLimited),
        '429': openAi.rateLimited('polls', true),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(true),
      },
    },
  },
  '/v1/responses/{id}/cancel': {
    description: otherMethods('POST'),
    post: {
      operationId: 'cancelResponse',
      summary: 'Cancel a queued or in-progress request (OpenAI-compatible)',
      description:
        'A model call in flight is aborted and a late result dropped: a cancelled request is never completed. ' +
        'Cancelling a cancelled request answers it again. No body is read. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [responseIdParameter],
      responses: {
        '200': responseAnswer('The Response, `cancelled`.', rateLimited),
        '400': openAi.unparsablePath('The request is completed or failed: it cannot be cancelled.'),
        '401': openAi.unauthorized(),
        '403': openAi.forbidden(),
        '404': openAiErrorAnswer('Unknown id, one of another account, or one older than 24 hours.', rateLimited),
        '429': openAi.rateLimited('polls'),
        '408': requestTimedOut(),
        '431': headersTooLarge(),
        '500': openAi.fault(),
        '503': openAi.stopping(),
      },
    },
  },
} as const;

// ---- OpenAI's Files and Batches APIs (contract 16) ----

/**
 * The upload form of `POST /v1/files`. Written here by hand: the route reads the form with busboy as it streams
 * (adapters/http/multipartUpload.ts) and checks its fields by hand (openai/batches/routes.ts, uploadExpiry), so there is
 * no zod schema to generate it from.
 */
const fileUploadForm = {
  type: 'object',
  description:
    'A `multipart/form-data` form: `purpose` and the `file` part (one), and optionally `expires_after[anchor]` ' +
    'with `expires_after[seconds]`. A field sent before `file` (as the official SDKs send `purpose`) is checked ' +
    'before the bytes are read; one sent after it, once they are stored (they are then removed if it is refused).',
  required: ['file', 'purpose'],
  properties: {
    file: {
      type: 'string',
      contentMediaType: 'application/octet-stream',
      description:
        'The file’s bytes: for a batch, JSONL, one request a line. At most `batches.maxFileBytes` (413 beyond); ' +
        'its name (the part’s `filename`) at most 255 characters, without control characters.',
    },
    purpose: { type: 'string', enum: [...uploadPurposes], description: 'Only `batch`: airs runs batches.' },
    'expires_after[anchor]': {
      type: 'string',
      enum: ['created_at'],
      description: 'With `expires_after[seconds]`: the file expires that long after its upload (else never).',
    },
    'expires_after[seconds]': {
      type: 'integer',
      minimum: expiresAfterBounds.minSeconds,
      maximum: expiresAfterBounds.maxSeconds,
      description: 'Whole seconds, from an hour to 30 days; with `expires_after[anchor]`.',
    },
  },
  dependentRequired: {
    'expires_after[anchor]': ['expires_after[seconds]'],
    'expires_after[seconds]': ['expires_after[anchor]'],
  },
};

/**
 * The lists' query parameters. Written here by hand: the routes read them from the URL by hand
 * (openai/batches/routes.ts, limitOf), with the bounds shown (listLimits).
 */
const afterParameter = (what: string) => ({
  name: 'after',
  in: 'query',
  required: false,
  description: `The ${what} id after which the page begins (a page’s \`last_id\`); an unknown one gives an empty page.`,
  schema: { type: 'string' },
});

const limitParameter = (bounds: { readonly max: number; readonly fallback: number }) => ({
  name: 'limit',
  in: 'query',
  required: false,
  description: `How many items a page holds at most (400 outside 1 to ${bounds.max}).`,
  schema: { type: 'integer', minimum: 1, maximum: bounds.max, default: bounds.fallback },
});

const fileIdParameter = idParameter('The file’s `id` (`file-…`).');
const batchIdParameter = idParameter('The batch’s `id` (`batch_…`).');

const jsonAnswer = (description: string, schemaName: string) => ({
  description,
  headers: responseHeaders(rateLimited),
  content: jsonContent(schemaName),
});

/** What every Files and Batches route may answer besides its own statuses. */
const batchRouteErrors = (budget: 'submits' | 'polls') => ({
  '401': openAi.unauthorized(),
  '403': openAi.forbidden(),
  '429': openAi.rateLimited(budget),
  '408': requestTimedOut(),
  '431': headersTooLarge(),
  '500': openAi.fault(),
  '503': openAi.stopping(),
});

/** A create that writes (an upload, a batch): the server stopping, or its disk under its free-space floor. */
const diskFloor = () =>
  openAiErrorAnswer(
    'The server is stopping, its write queue is full, or the data directory’s disk is under its free-space floor ' +
      '(`storage.minFreeMegabytes`; `Retry-After: 30`), told before the body is read; an upload that takes the disk ' +
      'under the floor while it streams is stopped and nothing of it is kept. Nothing was created; try again.',
    { 'Retry-After': 'required' },
  );

const unknownFile = () =>
  openAiErrorAnswer('Unknown id, one of another account, or a file deleted or expired (`not_found`).', rateLimited);
const unknownBatch = () => openAiErrorAnswer('Unknown id, or one of another account (`not_found`).', rateLimited);

const batchPaths = {
  '/v1/files': {
    description: otherMethods('POST, GET'),
    post: {
      operationId: 'uploadFile',
      summary: 'Upload a file: a batch’s input (OpenAI-compatible)',
      description:
        'The bytes stream to the store as they arrive (never whole in memory); the `200` comes once they are ' +
        'durably stored. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      requestBody: {
        required: true,
        content: {
          'multipart/form-data': {
            schema: ref('schemas', 'FileUpload'),
            encoding: { file: { contentType: 'application/octet-stream' } },
          },
        },
      },
      responses: {
        '200': jsonAnswer('The File, stored.', 'File'),
        '400': openAiErrorAnswer(
          'Not a `multipart/form-data` form, or a malformed one; no `file` part, or two; `purpose` missing or not ' +
            '`batch`; `expires_after[anchor]` not `created_at`, or `expires_after[seconds]` not a whole number from ' +
            '3600 to 2592000 (named in `param`). Or a client that closed its connection before its form arrived.',
          rateLimitedIfAdmitted,
        ),
        '413': openAiErrorAnswer('The file is larger than `batches.maxFileBytes` (nothing is kept).', rateLimited),
        ...batchRouteErrors('submits'),
        '429': openAiErrorAnswer(
          'The account’s submits budget is spent; or, decided before the body is read, its files would hold more ' +
            'than its plan’s `maxFileStorageBytes` (a declared `Content-Length` is held whole), it keeps its plan’s ' +
            '`maxFiles` files, or it has its plan’s `maxConcurrentUploads` uploads streaming; named in the message ' +
            '(`rate_limit_error`, code `rate_limited`).',
          { 'Retry-After': 'required', ...rateLimited },
        ),
        '503': diskFloor(),
      },
    },
    get: {
      operationId: 'listFiles',
      summary: 'List the account’s files (OpenAI-compatible)',
      description: 'Uploads and batches’ output files, newest first unless `order=asc`. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [
        {
          name: 'purpose',
          in: 'query',
          required: false,
          description: 'Only the files of this purpose (`batch`, `batch_output`).',
          schema: { type: 'string' },
        },
        afterParameter('file'),
        limitParameter(listLimits.files),
        {
          name: 'order',
          in: 'query',
          required: false,
          description: 'By creation time.',
          schema: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
        },
      ],
      responses: {
        '200': jsonAnswer('A page of the files.', 'FileList'),
        '400': openAiErrorAnswer('`limit` or `order` out of its bounds (named in `param`).', rateLimited),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/files/{id}': {
    description: otherMethods('GET, DELETE'),
    get: {
      operationId: 'retrieveFile',
      summary: 'A file (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': jsonAnswer('The File.', 'File'),
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('polls'),
      },
    },
    delete: {
      operationId: 'deleteFile',
      summary: 'Delete a file (OpenAI-compatible)',
      description: 'A batch that already read its input file goes on. Spends a submit.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': jsonAnswer('The file is deleted.', 'FileDeleted'),
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('submits'),
      },
    },
  },
  '/v1/files/{id}/content': {
    description: otherMethods('GET'),
    get: {
      operationId: 'downloadFile',
      summary: 'A file’s bytes (OpenAI-compatible)',
      description: 'Streamed, as stored (JSONL for a batch’s files). Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [fileIdParameter],
      responses: {
        '200': {
          description: 'The bytes.',
          headers: {
            ...responseHeaders(rateLimited),
            'Content-Disposition': {
              description: '`attachment`, with the file’s name (`filename`, in ASCII, and `filename*`, in UTF-8).',
              required: true,
              schema: { type: 'string', pattern: '^attachment; ' },
            },
          },
          content: {
            'application/octet-stream': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } },
          },
        },
        '400': openAi.unparsablePath(),
        '404': unknownFile(),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/batches': {
    description: otherMethods('POST, GET'),
    post: {
      operationId: 'createBatch',
      summary: 'Create a batch of an uploaded file (OpenAI-compatible)',
      description:
        'Answers once the batch is committed, `validating`: each line becomes a request in the same queue. Spends ' +
        'a submit; its lines spend neither the per-minute submits nor `maxQueued`.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      requestBody: { required: true, content: jsonContent('BatchCreate') },
      responses: {
        '200': jsonAnswer('The Batch, `validating`.', 'Batch'),
        '400': openAiErrorAnswer(
          'Malformed JSON or a body over the JSON bounds; a body `BatchCreate` refuses (the field named in ' +
            '`param`); an input file that is not a `batch` upload (`param: "input_file_id"`); a `Content-Type` ' +
            'that is not JSON. Or a client that closed its connection before its body arrived.',
          rateLimitedIfAdmitted,
        ),
        '404': openAiErrorAnswer(
          'The input file is unknown, another account’s, deleted or expired (`not_found`).',
          rateLimited,
        ),
        '413': openAiErrorAnswer(
          'The body is larger than `maxBodyBytes`; refused without reading it all.',
          rateLimited,
        ),
        ...batchRouteErrors('submits'),
        '429': openAiErrorAnswer(
          'The account’s submits budget is spent, or it has its plan’s `maxBatchesInProgress` batches not ended ' +
            '(`rate_limit_error`, code `rate_limited`); or it used its `tokensPerDay` or `tokensPerMonth` budget ' +
            '(code `insufficient_quota`).',
          { 'Retry-After': 'required', ...rateLimited },
        ),
        '503': diskFloor(),
      },
    },
    get: {
      operationId: 'listBatches',
      summary: 'List the account’s batches, newest first (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [afterParameter('batch'), limitParameter(listLimits.batches)],
      responses: {
        '200': jsonAnswer('A page of the batches.', 'BatchList'),
        '400': openAiErrorAnswer('`limit` out of its bounds (`param: "limit"`).', rateLimited),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/batches/{id}': {
    description: otherMethods('GET'),
    get: {
      operationId: 'retrieveBatch',
      summary: 'A batch, with its counts exact at every read (OpenAI-compatible)',
      description: 'Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [batchIdParameter],
      responses: {
        '200': jsonAnswer('The Batch.', 'Batch'),
        '400': openAi.unparsablePath(),
        '404': unknownBatch(),
        ...batchRouteErrors('polls'),
      },
    },
  },
  '/v1/batches/{id}/cancel': {
    description: otherMethods('POST'),
    post: {
      operationId: 'cancelBatch',
      summary: 'Cancel a batch (OpenAI-compatible)',
      description:
        'Queued lines are cancelled at once; running ones finish (or are aborted) within the model’s timeout; ' +
        'then `cancelled`. No body is read. Spends a poll.',
      tags: ['OpenAI-compatible'],
      security: bearer,
      parameters: [batchIdParameter],
      responses: {
        '200': jsonAnswer(
          'The Batch, `cancelling`; or as it is, once it ended or while it finalizes or expires.',
          'Batch',
        ),
        '400': openAi.unparsablePath(),
        '404': unknownBatch(),
        ...batchRouteErrors('polls'),
      },
    },
  },
} as const;

// ---- Webhooks (issue 30): what airs POSTs to an account's endpoints, an OpenAPI 3.1 `webhooks` entry per event ----

/** The pattern of an id of kind `kind`, as identifiers.ts defines its form. */
const idPattern = (kind: IdKind): RegExp => {
  const { prefix, lengths } = idForms[kind];
  return new RegExp(`^${prefix}(?:${lengths.map((length) => `[A-Za-z0-9_-]{${length}}`).join('|')})$`);
};

/** When each event is sent, and what `data.id` names. */
const webhookEventWhen: Readonly<Record<WebhookEventType, string>> = {
  'response.completed': 'A Response (a request made by `POST /v1/responses`) completed.',
  'response.failed': 'A Response failed for good, after the attempts airs makes (`processing.maxAttempts`).',
  'response.cancelled':
    'A Response was cancelled (`POST /v1/responses/{id}/cancel`, or a waiting create whose caller went away).',
  'batch.completed': 'A batch finished every line; its output and error files are written.',
  'batch.failed': 'A batch’s input file was refused (its lines are not valid); no line was run.',
  'batch.expired': 'A batch’s completion window passed before every line finished; its files hold the lines that did.',
  'batch.cancelled': 'A cancelled batch stopped; its files hold the lines that finished before.',
  'request.completed':
    'A request completed, whichever face made it (`/v1/ai`, `/v1/chat/completions`, `/v1/responses`); a batch’s ' +
    'lines make none (their batch’s event is the one).',
  'request.failed': 'A request failed for good, after the attempts airs makes (`processing.maxAttempts`).',
  'request.cancelled': 'A request was cancelled before it finished.',
  'request.expired': 'A request reached the end of its lifetime (`requestTtlSeconds`) still queued or processing.',
};

/** What `data.id` of an event of `type` is: the Response's, the batch's or the request's id. */
const webhookDataKind = (type: WebhookEventType): IdKind =>
  type.startsWith('response.') ? 'response' : type.startsWith('batch.') ? 'batch' : 'request';

/** The body of a delivery of `type`: OpenAI's event envelope (domain/webhook/envelope.ts). */
const webhookEventSchema = (type: WebhookEventType) =>
  z
    .object({
      id: z
        .string()
        .regex(idPattern('webhookEvent'))
        .meta({
          description:
            'The event’s id, `evt_…`: made from what it is about, the same in every attempt and redelivery, and the ' +
            'same on every node. Dedupe on it (or on `webhook-id`, one per endpoint).',
        }),
      object: z.literal('event'),
      created_at: z
        .number()
        .int()
        .nonnegative()
        .meta({ description: 'When the event happened (the ending), in unix seconds; the same in every attempt.' }),
      type: z.literal(type),
      data: z
        .looseObject({
          id: z
            .string()
            .regex(idPattern(webhookDataKind(type)))
            .meta({
              description: `The ${webhookDataKind(type)}’s id (\`${idForms[webhookDataKind(type)].prefix}…\`): fetch it for the rest.`,
            }),
        })
        .meta({ description: 'What the event is about. Other fields may be added.' }),
    })
    .meta({ description: `\`${type}\`: ${webhookEventWhen[type]}` });

/** `response.completed` → `WebhookResponseCompleted`, the name of its body's schema (as OpenAI names them). */
const webhookSchemaName = (type: WebhookEventType): string =>
  `Webhook${type
    .split('.')
    .map((part) => `${part[0]?.toUpperCase()}${part.slice(1)}`)
    .join('')}`;

/** The Standard Webhooks headers of every delivery (app/webhooks/signing.ts). */
const webhookHeaders = {
  'webhook-id': {
    description:
      'The delivery’s id, `wh_…` (one per event and endpoint): the same on every retry and redelivery, so a ' +
      'receiver that has seen it can answer 2xx and do nothing.',
    schema: z.string().regex(idPattern('webhookDelivery')),
  },
  'webhook-timestamp': {
    description:
      'When this attempt was signed, in unix seconds: each retry is signed anew. Refuse one far from now (the ' +
      '`openai` SDK allows 5 minutes) against replays.',
    schema: z.string().regex(/^\d{1,12}$/),
  },
  'webhook-signature': {
    description:
      'Standard Webhooks signatures, space-separated: `v1,<base64 of HMAC-SHA256(key, "<webhook-id>.' +
      '<webhook-timestamp>.<body>")>`, the key being the base64 after `whsec_` in the endpoint’s secret. Two during ' +
      'the 24 hours after a rotation (the old and the new secret); accept the delivery if any one matches. ' +
      '`client.webhooks.unwrap(body, headers)` of the `openai` SDK checks it.',
    schema: z.string().regex(/^v1,[A-Za-z0-9+/]{43}=(?: v1,[A-Za-z0-9+/]{43}=)*$/),
  },
} as const;

const webhookHeaderParameters = Object.fromEntries(
  Object.entries(webhookHeaders).map(([name, header]) => [
    name,
    { name, in: 'header', required: true, description: header.description, schema: jsonSchema(header.schema) },
  ]),
);

/** One `webhooks` entry: the POST airs makes to an endpoint whose filter takes `type` (no filter: every type). */
const webhookOperation = (type: WebhookEventType) => ({
  post: {
    operationId: `webhook${webhookSchemaName(type).slice('Webhook'.length)}`,
    summary: `${type}`,
    description:
      `${webhookEventWhen[type]} POSTed to each enabled endpoint of the account whose events include \`${type}\` ` +
      '(an endpoint added without `--events` gets every type), signed per Standard Webhooks. Delivered at least ' +
      'once; not in any order.',
    tags: ['Webhooks'],
    security: [],
    parameters: Object.keys(webhookHeaders).map((name) => ref('parameters', name)),
    requestBody: { required: true, content: jsonContent(webhookSchemaName(type)) },
    responses: {
      '2XX': {
        description:
          'Acknowledged: any 2xx answered within 10 seconds counts as delivered. At most 64 KiB of the answer is ' +
          'read; its body is not kept.',
      },
      default: {
        description:
          'Anything else is a failed attempt: another status (a 3xx too: redirects are not followed), no status ' +
          'within 10 seconds, a connection refused or broken. It is retried with exponential backoff and jitter ' +
          'for up to 72 hours after the event (`webhooks.retentionHours`), with the same `webhook-id` and body. ' +
          'An endpoint that has failed for 3 days is disabled until `airs webhooks enable`.',
      },
    },
  },
});

const build = (): Json => ({
  openapi: '3.1.0',
  info: {
    title: 'airs: asynchronous AI request service',
    version: '1.0.0',
    description:
      'Submit a prompt, poll for the result. Every `/v1/ai` call needs `Authorization: Bearer <key>`; every ' +
      'authenticated answer carries the IETF draft `RateLimit-Policy` and `RateLimit` headers. Every error has ' +
      'one shape (`Error`). Any other method on `/v1/ai` answers `405 method_not_allowed` with ' +
      '`Allow: GET, POST`; any unknown path answers `404 not_found`. The OpenAI-compatible face ' +
      '(`/v1/models`, `/v1/chat/completions`, `/v1/responses`, `/v1/files`, `/v1/batches`) serves the same ' +
      'requests, accounts and limits in ' +
      'OpenAI’s wire format, for the official OpenAI SDKs and the libraries built on them; its errors, and the ' +
      '`404` of an unknown path under its prefixes, are in OpenAI’s shape (`OpenAIError`). See docs/api.md.',
    license: { name: 'MIT', identifier: 'MIT' },
  },
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  tags: [
    adminTag,
    {
      name: 'OpenAI-compatible',
      description:
        'OpenAI’s Models, Chat Completions, Responses (waiting, background and streaming), Files and Batches over ' +
        'the same requests as `/v1/ai`: `baseURL = <airs>/v1`.',
    },
    {
      name: 'Webhooks',
      description:
        'What airs POSTs to an account’s webhook endpoints (`airs webhooks add`), in OpenAI’s event envelope and ' +
        'signed per Standard Webhooks: the `openai` SDK’s `client.webhooks.unwrap(body, headers)` verifies them.',
    },
  ],
  paths: {
    '/v1/ai': {
      post: {
        operationId: 'submitRequest',
        summary: 'Submit a prompt',
        security: bearer,
        parameters: [ref('parameters', 'Idempotency-Key'), ref('parameters', 'Cancel-After')],
        requestBody: { required: true, content: jsonContent('SubmitRequest') },
        responses: {
          '202': {
            description: 'Accepted, and durably on disk: poll the `Location`.',
            headers: responseHeaders({ Location: 'required', 'Idempotent-Replayed': 'optional', ...rateLimited }),
            content: jsonContent('Accepted'),
          },
          '400': errorAnswer(
            'Malformed JSON, JSON nested deeper than `maxJsonDepth` (64) or holding more than `maxJsonValues` ' +
              '(100,000) values, a body that is not an object, `model` or `prompt` missing or not a string, an empty ' +
              'or too long prompt (`maxPromptChars`, `maxPromptBytes`), an unknown model, or a `Content-Type` that ' +
              'is not JSON (with the RateLimit headers); ' +
              'or a request Node or h3 cannot parse (without them).',
            rateLimitedIfAdmitted,
          ),
          '401': errorAnswer('No usable key: missing, not `Bearer <key>`, unknown or revoked.', {
            'WWW-Authenticate': 'required',
          }),
          '403': errorAnswer('A valid key whose account is suspended.'),
          '413': errorAnswer('The body is larger than `maxBodyBytes`; refused without reading it all.', rateLimited),
          '429': errorAnswer(
            'The account’s submits budget is spent (`details.budget`, `details.retry_after_seconds`); or its token ' +
              'limits refuse (contract 21): `rate_limited` for `tokensPerMinute` (`details.budget`: `tokens`), ' +
              '`insufficient_quota` once `tokensPerDay` or `tokensPerMonth` is used (`details`: `budget`, `limit`, ' +
              '`used`, `resets_at`).',
            {
              'Retry-After': 'required',
              ...rateLimited,
            },
          ),
          '422': errorAnswer(
            'The `Idempotency-Key` was used by this account with another body (`idempotency_key_reused`).',
            rateLimited,
          ),
          '408': requestTimedOut(),
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
          {
            name: 'Prefer',
            in: 'header',
            required: false,
            description:
              '`wait=N` (RFC 7240; other preferences are ignored): a long poll, held until the request is final or ' +
              '`N` seconds pass (capped at `http.maxPollWaitSeconds`, 60 by default). It spends one poll of the ' +
              'budget and holds a place among the account’s open calls (`maxOpenCalls`) while it waits; without a ' +
              'place it is answered at once.',
            schema: { type: 'string', examples: ['wait=30'] },
          },
        ],
        responses: {
          '200': {
            description:
              '`queued` (with `Retry-After`: poll again then; at once if `Preference-Applied` is there) or ' +
              '`completed` (with the response).',
            headers: responseHeaders({ 'Retry-After': 'optional', 'Preference-Applied': 'optional', ...rateLimited }),
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
          '408': requestTimedOut(),
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
    ...chatPaths,
    ...openAiPaths,
    ...batchPaths,
    ...adminPaths,
    ...usagePathItem,
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
  webhooks: Object.fromEntries(webhookEventTypes.map((type) => [type, webhookOperation(type)])),
  components: {
    securitySchemes: {
      bearerAuth: {
        type: 'http',
        scheme: 'bearer',
        description: 'An airs API key: `sk_` and 43 base64url characters.',
      },
      adminKey: adminSecurityScheme,
    },
    schemas: {
      SubmitRequest: jsonSchema(submissionBodySchema, 'input'),
      Accepted: jsonSchema(acceptedSchema),
      PollAnswer: jsonSchema(pollSchema),
      Error: jsonSchema(errorSchema),
      ResponsesCreate: jsonSchema(responsesCreateBodySchema, 'input'),
      Response: jsonSchema(responseObjectSchema),
      ResponseStreamEvent: jsonSchema(responseStreamEventSchema),
      ChatCompletionCreate: jsonSchema(chatCompletionCreateBodySchema, 'input'),
      ChatCompletion: jsonSchema(chatCompletionSchema),
      ChatCompletionChunk: jsonSchema(chatCompletionChunkSchema),
      ModelList: jsonSchema(modelListSchema),
      Model: jsonSchema(modelObjectSchema),
      FileUpload: fileUploadForm,
      File: jsonSchema(fileObjectSchema),
      FileDeleted: jsonSchema(fileDeletedSchema),
      FileList: jsonSchema(fileListSchema),
      BatchCreate: jsonSchema(batchCreateBodySchema, 'input'),
      Batch: jsonSchema(batchObjectSchema),
      BatchList: jsonSchema(batchListSchema),
      OpenAIError: jsonSchema(openAiErrorSchema),
      Probe: jsonSchema(probeSchema),
      ...adminSchemas(jsonSchema),
      ...usageSchemas,
      ...Object.fromEntries(
        webhookEventTypes.map((type) => [webhookSchemaName(type), jsonSchema(webhookEventSchema(type))]),
      ),
      OpenApiDocument: jsonSchema(
        z.looseObject({ openapi: z.string().regex(/^3\.1\.\d+$/), info: z.looseObject({}), paths: z.looseObject({}) }),
      ),
    },
    headers: Object.fromEntries(Object.keys(headers).map((name) => [name, headerObject(name as keyof typeof headers)])),
    parameters: { 'Idempotency-Key': idempotencyKey, 'Cancel-After': cancelAfter, ...webhookHeaderParameters },
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
export const serveOpenApi = (headers: Record<string, string> = {}): Response =>
  answer(200, openApiText(), { ...headers, ...jsonHeaders, 'Cache-Control': 'public, max-age=300' });

// The error codes of the schema are exactly the ones errorResponse.ts sends.
type Is<T extends true> = T;
export type ErrorCodeChecks = [
  Is<ErrorCode extends (typeof errorCodes)[number] ? true : false>,
  Is<(typeof errorCodes)[number] extends ErrorCode ? true : false>,
];

/**
 * What the OpenAI face sends must fit its schemas. Its builders return plain object literals, whose string fields
 * TypeScript widens (`object: string`, not `"response"`): the check is on the shape (every field the schema names,
 * of the right kind), with the schema's literals widened too; openapi.test.ts checks the values of real answers.
 */
type Widen<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends boolean
      ? boolean
      : T extends readonly (infer U)[]
        ? readonly Widen<U>[]
        : T extends object
          ? { [K in keyof T]: Widen<T[K]> }
          : T;
type Fits<Sent, Schema> = Widen<Sent> extends Widen<Schema> ? true : false;
/** `Omit` that keeps the named fields of a type with an index signature (zod's loose objects). */
type Without<T, Name extends string> = { [K in keyof T as K extends Name ? never : K]: T[K] };
type ResponseObject = z.infer<typeof responseObjectSchema>;
export type OpenAiWireChecks = [
  // `created_at` is typed `number | null` by its helper, though a request always has a creation time.
  Is<Fits<Without<ReturnType<typeof responseObjectOf>, 'created_at'>, Without<ResponseObject, 'created_at'>>>,
  Is<Fits<ReturnType<typeof modelObjectOf>, z.infer<typeof modelObjectSchema>>>,
  Is<Fits<ReturnType<typeof modelListOf>, z.infer<typeof modelListSchema>>>,
  Is<Fits<ReturnType<typeof fileObjectOf>, z.infer<typeof fileObjectSchema>>>,
  Is<Fits<ReturnType<typeof batchObjectOf>, z.infer<typeof batchObjectSchema>>>,
  Is<Fits<ReturnType<typeof listOf<ReturnType<typeof fileObjectOf>>>, z.infer<typeof fileListSchema>>>,
  Is<Fits<ReturnType<typeof listOf<ReturnType<typeof batchObjectOf>>>, z.infer<typeof batchListSchema>>>,
  // A webhook's body, whatever its type (the schema names one type each; the envelope's `type` is their union).
  Is<
    Fits<
      Without<ReturnType<typeof webhookEnvelope>, 'type'>,
      Without<z.infer<ReturnType<typeof webhookEventSchema>>, 'type'>
    >
  >,
];
