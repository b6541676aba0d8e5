import { z } from 'zod';
import { submissionBodySchema } from '../../app/submission.js';
import { type webhookEnvelope, webhookEventTypes } from '../../domain/webhook/envelope.js';
import { adminPaths, adminSchemas, adminSecurityScheme, adminTag } from './admin/openapi.js';
import { usagePathItem, usageSchemas } from './admin/usageOpenapi.js';
import { answer, type ErrorCode, jsonHeaders } from './errorResponse.js';
import { batchCreateBodySchema } from './openai/batches/bodies.js';
import type { batchObjectOf, fileObjectOf, listOf } from './openai/batches/wire.js';
import {
  batchListSchema,
  batchObjectSchema,
  fileDeletedSchema,
  fileListSchema,
  fileObjectSchema,
} from './openai/batches/wireFormat.js';
import { chatCompletionChunkSchema, chatCompletionSchema } from './openai/chat/completionSchema.js';
import { chatCompletionCreateBodySchema } from './openai/chat/wireFormat.js';
import type { modelListOf, modelObjectOf } from './openai/models.js';
import type { responseObjectOf } from './openai/responseObject.js';
import { responseObjectSchema } from './openai/responseObjectSchema.js';
import { responseStreamEventSchema } from './openai/responseStreamEventSchema.js';
import {
  modelListSchema,
  modelObjectSchema,
  openAiErrorSchema,
  responsesCreateBodySchema,
} from './openai/wireFormat.js';
import { aiPaths } from './openapi/aiPaths.js';
import { batchPaths } from './openapi/batchPaths.js';
import { chatPaths } from './openapi/chatPaths.js';
import {
  cancelAfter,
  errorAnswer,
  headerObject,
  headers,
  idempotencyKey,
  type Json,
  jsonContent,
  jsonSchema,
} from './openapi/components.js';
import { filePaths, fileUploadForm } from './openapi/filePaths.js';
import { modelPaths } from './openapi/modelPaths.js';
import { responsePaths } from './openapi/responsePaths.js';
import {
  webhookEventSchema,
  webhookHeaderParameters,
  webhookOperation,
  webhookSchemaName,
} from './openapi/webhooks.js';
import { acceptedSchema, type errorCodes, errorSchema, pollSchema, probeSchema } from './wireFormat.js';

/**
 * The OpenAPI 3.1 document of the `/v1` routes (and the probes), generated from the zod schemas the code uses
 * (zod 4's JSON Schema output, draft 2020-12, the dialect of OpenAPI 3.1). Served at `GET /v1/openapi.json`, and
 * committed as `docs/openapi.json`: test/http/openapi.test.ts fails when the two differ (`npm run openapi` rewrites
 * the file). Its frame is here; its paths, one file per face, and what they share are in openapi/.
 */

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
    ...aiPaths,
    ...chatPaths,
    ...modelPaths,
    ...responsePaths,
    ...filePaths,
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
