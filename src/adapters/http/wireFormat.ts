import { z } from 'zod';
import { servedTierField } from '../../app/serviceTierField.js';
import type { AcceptedBody, PollBody } from './ai/wire.js';

/**
 * The answers of the public API (product contract sections 1, 2 and 10) as zod schemas. The OpenAPI document
 * (adapters/http/openapi.ts) is generated from them and from the POST body schema (app/submission.ts); the type checks at
 * the bottom keep them in step with what the code really sends.
 */

const requestId = z
  .string()
  .regex(/^req_[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: '`req_` and at least 128 random bits, URL-safe.',
    examples: ['req_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ'],
  });

const model = z.string().meta({ description: 'The model id the request was submitted for.' });

/** The 202 of `POST /v1/ai`. Extra fields may be added later; the specified ones never change. */
export const acceptedSchema = z
  .looseObject({ request_id: requestId, model })
  .meta({ description: 'Sent only once the request is durably committed.' });

const unixSeconds = (description: string) => z.number().int().nonnegative().meta({ description });
const createdAt = unixSeconds('When the request was made (Unix seconds). An extra field the contract allows.');

export const usageSchema = z
  .object({
    input_tokens: z.number().int().nonnegative(),
    output_tokens: z.number().int().nonnegative(),
    total_tokens: z.number().int().nonnegative(),
  })
  .meta({
    description:
      'Tokens the model read and wrote: the upstream’s own figures for `openai` models, whitespace-separated words ' +
      'for `echo`. Absent when the model did not say.',
  });

export const toolCallSchema = z
  .object({
    id: z.string(),
    type: z.literal('function'),
    function: z.object({
      name: z.string(),
      arguments: z.string().meta({ description: 'JSON, as the model wrote it.' }),
    }),
  })
  .meta({ description: 'A function tool the model calls (requests of the OpenAI face with `tools`).' });

export const queuedSchema = z
  .looseObject({
    req_id: requestId,
    status: z.literal('queued'),
    model,
    created_at: createdAt,
    service_tier: servedTierField,
    queue_position: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .optional()
      .meta({
        description:
          'While it waits for a worker (absent once it is processed): how many due requests of its model the workers ' +
          'would start before it if nothing new arrived (`0`: next), in the claim’s order (tiers first, then ' +
          'accounts in turn); `10000` means at least that many. An estimate: it leaves out where each server’s round ' +
          'robin starts, the batches’ share of the workers, accounts’ limits and shares of a model, promotion of ' +
          '`default` requests while they wait, and requests that arrive later in a higher tier. An extra field.',
      }),
  })
  .meta({ description: 'Waiting or being processed; poll again after `Retry-After` seconds.' });

export const completedSchema = z
  .looseObject({
    req_id: requestId,
    status: z.literal('completed'),
    model,
    response: z.string().meta({ description: 'The text the model generated.' }),
    created_at: createdAt,
    completed_at: unixSeconds('When the model’s answer was recorded (Unix seconds). An extra field.').optional(),
    usage: usageSchema.optional(),
    tool_calls: z.array(toolCallSchema).optional(),
    service_tier: servedTierField,
  })
  .meta({ description: 'Done: the response is here.' });

/** The 200 of `GET /v1/ai`: the only public statuses are `queued` and `completed`. */
export const pollSchema = z.discriminatedUnion('status', [queuedSchema, completedSchema]);

export const errorCodes = [
  'invalid_request',
  'unauthorized',
  'forbidden',
  'not_found',
  'method_not_allowed',
  'rate_limited',
  'insufficient_quota',
  'idempotency_key_reused',
  'server_error',
] as const;

/** Every error, on every route: `{"error": {"code", "message", "details"?}}` and nothing else. */
export const errorSchema = z
  .object({
    error: z.object({
      code: z.enum(errorCodes),
      message: z.string().min(1).meta({ description: 'For humans: what to fix. Never internals.' }),
      details: z
        .record(z.string(), z.unknown())
        .optional()
        .meta({
          description:
            'Machine-readable facts where they help: `known_models`, `max_prompt_chars` (400), `budget` and ' +
            '`retry_after_seconds` (429), `limit`, `used` and `resets_at` (429 `insufficient_quota`), `final: true` (500 of a request whose processing failed for good).',
        }),
    }),
  })
  .meta({ description: 'The one error shape of the API.' });

/** `/healthz` and `/readyz` when all is well. */
export const probeSchema = z.object({
  status: z.enum(['ok', 'ready']),
  /** `/readyz`: each `openai` model's upstream as last seen (at start, or by its calls); never a cause of 503. */
  upstreams: z
    .record(
      z.string(),
      z.object({
        state: z.enum(['unchecked', 'ok', 'problem']),
        cause: z.string().optional(),
        seen_at: z.string().optional(),
      }),
    )
    .optional(),
});

/** The header values the API sends, with the forms the contract fixes. */
export const headerSchemas = {
  rateLimitPolicy: z
    .string()
    .regex(/^"(submits|polls)";q=\d+;w=\d+$/)
    .meta({
      description: 'IETF draft RateLimit-Policy, structured-field form: the budget, q calls per w seconds.',
      examples: ['"submits";q=60;w=60'],
    }),
  rateLimit: z
    .string()
    .regex(/^"(submits|polls)";r=\d+;t=\d+$/)
    .meta({
      description: 'IETF draft RateLimit: r calls left now, t seconds until the budget is whole again.',
      examples: ['"submits";r=59;t=1'],
    }),
  retryAfter: z.string().regex(/^\d+$/).meta({ description: 'Whole seconds to wait before the next call.' }),
  location: z
    .string()
    .regex(/^\/v1\/ai\?req_id=req_[A-Za-z0-9_-]+$/)
    .meta({ description: 'Where to poll the new request.' }),
  wwwAuthenticate: z.string().regex(/^Bearer\b/),
  allow: z.string(),
  idempotentReplayed: z.literal('true'),
} as const;

// What the code sends must fit the schemas.
type Is<T extends true> = T;
export type WireChecks = [
  Is<AcceptedBody extends z.infer<typeof acceptedSchema> ? true : false>,
  Is<PollBody extends z.infer<typeof pollSchema> ? true : false>,
];
