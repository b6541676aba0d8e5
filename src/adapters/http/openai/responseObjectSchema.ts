import { z } from 'zod';
import { servedTierField } from '../../../app/serviceTierField.js';

/** OpenAI's Response object as a zod schema: its output items, its usage and the settings it echoes. */

const responseId = z
  .string()
  .regex(/^resp_[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: 'The request’s id under OpenAI’s prefix: `resp_X` is the request `req_X` of `/v1/ai`.',
    examples: ['resp_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ'],
  });

export const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });

export const responseStatuses = ['queued', 'in_progress', 'completed', 'failed', 'cancelled'] as const;

export const outputText = z.looseObject({
  type: z.literal('output_text'),
  text: z.string().meta({ description: 'The text the model generated.' }),
  annotations: z.array(z.unknown()),
});

const itemStatus = z.enum(['in_progress', 'completed']);

const outputMessage = z
  .looseObject({
    type: z.literal('message'),
    id: z.string().regex(/^msg_/),
    status: itemStatus,
    role: z.literal('assistant'),
    content: z.array(outputText).meta({ description: 'One `output_text` part (none while a stream writes it).' }),
  })
  .meta({ description: 'The answer’s text: one assistant message with one `output_text` part.' });

const outputFunctionCall = z
  .looseObject({
    type: z.literal('function_call'),
    id: z.string().regex(/^fc_/),
    call_id: z.string().meta({ description: 'The model’s id for the call: its `function_call_output` names it.' }),
    name: z.string(),
    arguments: z.string().meta({ description: 'JSON text, as the model wrote it (empty while a stream opens it).' }),
    status: itemStatus,
  })
  .meta({ description: 'A function the model calls.' });

export const outputItem = z.union([outputMessage, outputFunctionCall]);

/** A Response's `usage` (also a batch's, summed over its lines: batches/wireFormat.ts). */
export const responsesUsageSchema = z.object({
  input_tokens: z.int().min(0),
  input_tokens_details: z.object({ cached_tokens: z.literal(0) }),
  output_tokens: z.int().min(0),
  output_tokens_details: z.object({ reasoning_tokens: z.literal(0) }),
  total_tokens: z.int().min(0),
});

const usage = responsesUsageSchema.meta({
  description:
    'Tokens read and written: the upstream’s figures for `openai` models; for `echo`, whitespace-separated words ' +
    'of the input and of the answer. airs knows no cached or reasoning tokens.',
});

/** The settings a Response echoes (adapters/http/openai/generationSettings.ts). */
const echoedFormat = z.union([
  z.object({ type: z.enum(['text', 'json_object']) }),
  z.object({ type: z.literal('json_schema'), name: z.string(), strict: z.boolean().nullable() }),
]);

/** A request as OpenAI's Response object (adapters/http/openai/responseObject.ts builds it). */
export const responseObjectSchema = z
  .looseObject({
    id: responseId,
    object: z.literal('response'),
    created_at: seconds,
    status: z.enum(responseStatuses).meta({
      description:
        '`queued` while it waits, `in_progress` while a worker has it, then `completed`, `failed` (after its ' +
        'retries) or `cancelled`.',
    }),
    background: z.boolean().nullable().meta({ description: 'As the create asked; null in a retrieve’s answers.' }),
    completed_at: seconds.nullable(),
    model: z.string(),
    output: z.array(outputItem).meta({
      description:
        'Empty until the request is completed; then its text as one message (left out when the model only called ' +
        'tools), then one `function_call` per tool call.',
    }),
    error: z
      .union([
        z.object({
          code: z.literal('server_error'),
          message: z.string(),
          type: z.literal('server_error'),
          param: z.null(),
        }),
        z.object({
          code: z.literal('deadline'),
          message: z.string(),
          type: z.literal('invalid_request_error'),
          param: z.null(),
        }),
      ])
      .nullable()
      .meta({
        description:
          'Set when `status` is `failed` (`server_error`), or `cancelled` because its `Cancel-After` deadline passed ' +
          '(`deadline`).',
      }),
    incomplete_details: z
      .object({ reason: z.enum(['max_output_tokens', 'content_filter', 'deadline']) })
      .nullable()
      .meta({
        description:
          'Why a completed answer stopped short: out of tokens, or filtered by the upstream; or `deadline`: cancelled ' +
          'because its `Cancel-After` deadline passed before it ended.',
      }),
    instructions: z.string().nullable().meta({ description: 'Always null: airs does not echo the instructions.' }),
    max_output_tokens: z.int().nullable(),
    metadata: z.record(z.string(), z.string()).meta({
      description: 'The `metadata` the create was sent with (`{}` when none), as it is kept with the request.',
    }),
    parallel_tool_calls: z.boolean(),
    temperature: z.number().nullable(),
    text: z.object({ format: echoedFormat }),
    tool_choice: z.union([
      z.enum(['none', 'auto', 'required']),
      z.object({ type: z.literal('function'), name: z.string() }),
    ]),
    tools: z.array(
      z.object({ type: z.literal('function'), name: z.string(), parameters: z.null(), strict: z.boolean().nullable() }),
    ),
    top_p: z.number().nullable(),
    user: z.string().nullable(),
    usage: usage.nullable().meta({ description: 'Set when the request is completed and its model told it.' }),
    service_tier: servedTierField,
  })
  .meta({
    description:
      'OpenAI’s Response object, with the fields its SDKs read. The settings (`temperature`, `text`, `tools`, ...) ' +
      'are echoed in the answers of the create that made it (without function `parameters` or a format’s ' +
      '`schema`); a retrieve shows OpenAI’s defaults.',
  });
