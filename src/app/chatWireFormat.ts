import { z } from 'zod';
import { metadataSchema } from './openAiWireFormat.js';

/**
 * `POST /v1/chat/completions` (product contract section 13) as zod schemas: the body airs understands, the
 * `chat.completion` answer and the `chat.completion.chunk` of its stream, in the shapes the official SDKs, vLLM and
 * llama.cpp use. The OpenAPI document (adapters/http/openapi.ts) is generated from them. Errors are OpenAI's shape
 * (openAiWireFormat.ts).
 */

// ---- The body ----

const textPart = z
  .looseObject({ type: z.literal('text'), text: z.string() })
  .meta({ description: 'A text part. Image, audio and file parts are refused (400).' });

const content = z.union([z.string(), z.array(textPart)]).meta({
  description: 'A string, or a list of text parts (joined).',
});

const toolCall = z
  .looseObject({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z.looseObject({
      name: z.string().min(1),
      arguments: z.string().meta({ description: 'JSON text, as the model wrote it.' }),
    }),
  })
  .meta({ description: 'A call of a function tool.' });

const message = z.union([
  z.looseObject({ role: z.enum(['system', 'developer', 'user']), content }),
  z.looseObject({
    role: z.literal('assistant'),
    content: content.nullable().optional(),
    tool_calls: z.array(toolCall).nullable().optional(),
  }),
  z.looseObject({
    role: z.literal('tool'),
    tool_call_id: z.string().min(1),
    content,
    name: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'The function’s name (LangChain sends it); not forwarded: the call answered names it.' }),
  }),
]);

const functionName = z.string().min(1).max(64);

const functionTool = z
  .looseObject({
    type: z.literal('function'),
    function: z.looseObject({
      name: functionName,
      description: z.string().nullable().optional(),
      parameters: z.record(z.string(), z.unknown()).nullable().optional().meta({ description: 'A JSON Schema.' }),
      strict: z.boolean().nullable().optional(),
    }),
  })
  .meta({ description: 'A function the model may call. Other tool types are refused (400).' });

const responseFormat = z.union([
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    json_schema: z.looseObject({
      name: functionName,
      description: z.string().nullable().optional(),
      schema: z.record(z.string(), z.unknown()).optional(),
      strict: z.boolean().nullable().optional(),
    }),
  }),
]);

const penalty = z.number().min(-2).max(2).nullable().optional();

/** The body of `POST /v1/chat/completions`. */
export const chatCompletionCreateBodySchema = z
  .looseObject({
    model: z.string().meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
    messages: z
      .array(message)
      .min(1)
      .meta({
        description:
          'The conversation. `echo` answers the last user message’s text; the `openai` provider sends them all. The ' +
          'stored conversation (with its parameters) is at most `maxPromptChars` and `maxPromptBytes`.',
      }),
    stream: z
      .boolean()
      .nullable()
      .optional()
      .meta({
        description:
          '`true`: answer with `chat.completion.chunk` events (`text/event-stream`), then `data: [DONE]`; the request ' +
          'is cancelled when the caller goes away.',
      }),
    stream_options: z
      .looseObject({ include_usage: z.boolean().nullable().optional() })
      .nullable()
      .optional()
      .meta({ description: '`include_usage: true`: a last chunk, with no choices, carries `usage`.' }),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    max_tokens: z.int().min(1).nullable().optional(),
    max_completion_tokens: z.int().min(1).nullable().optional(),
    stop: z
      .union([z.string(), z.array(z.string()).max(16)])
      .nullable()
      .optional(),
    seed: z.int().nullable().optional(),
    presence_penalty: penalty,
    frequency_penalty: penalty,
    response_format: responseFormat.nullable().optional().meta({
      description: '`json_schema` is refused on the `echo` provider (400).',
    }),
    tools: z.array(functionTool).nullable().optional().meta({
      description: 'Refused on the `echo` provider (400).',
    }),
    tool_choice: z
      .union([
        z.enum(['none', 'auto', 'required']),
        z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
      ])
      .nullable()
      .optional(),
    parallel_tool_calls: z.boolean().nullable().optional(),
    user: z.string().nullable().optional(),
    n: z.literal(1).nullable().optional().meta({ description: 'Only 1 (400 otherwise).' }),
    logprobs: z.literal(false).nullable().optional().meta({ description: 'Not supported (400 when true).' }),
    top_logprobs: z.null().optional().meta({ description: 'Not supported (400).' }),
    metadata: metadataSchema
      .nullable()
      .optional()
      .meta({
        description:
          'Bounded and kept with the request as on `POST /v1/responses` (400 beyond the bounds); no chat completion ' +
          'object shows it (OpenAI shows it only through stored completions, which airs does not serve).',
      }),
  })
  .meta({
    description:
      'An OpenAI chat completions body. The parameters are forwarded to `openai`-provider upstreams and kept with ' +
      'the request; fields that do not change the answer (`store`, `service_tier`, ...) are accepted and ignored.',
  });

// ---- The answer ----

const completionId = z
  .string()
  .regex(/^chatcmpl-[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: 'The request’s id under OpenAI’s prefix: `chatcmpl-X` is the request `req_X` of `/v1/ai`.',
  });

const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });

const finishReason = z.enum(['stop', 'length', 'tool_calls', 'content_filter']);

export const chatUsageSchema = z
  .looseObject({
    prompt_tokens: z.int().min(0),
    completion_tokens: z.int().min(0),
    total_tokens: z.int().min(0),
  })
  .meta({
    description:
      'Tokens read and written: the upstream’s figures for `openai` models; for `echo`, whitespace-separated words ' +
      'of the prompt and of the answer.',
  });

/** A completed request as a `chat.completion`. */
export const chatCompletionSchema = z
  .looseObject({
    id: completionId,
    object: z.literal('chat.completion'),
    created: seconds,
    model: z.string(),
    choices: z
      .array(
        z.looseObject({
          index: z.literal(0),
          message: z.looseObject({
            role: z.literal('assistant'),
            content: z.string().nullable().meta({ description: 'The text; null when the model only calls tools.' }),
            refusal: z.null(),
            tool_calls: z.array(toolCall).optional(),
          }),
          finish_reason: finishReason,
          logprobs: z.null(),
        }),
      )
      .length(1),
    usage: chatUsageSchema.nullable().optional().meta({ description: 'Absent when the model did not tell it.' }),
  })
  .meta({ description: 'OpenAI’s chat completion, as the SDKs read it.' });

const toolCallDelta = z.looseObject({
  index: z.int().min(0),
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

/** One event of a chat completion stream. */
export const chatCompletionChunkSchema = z
  .looseObject({
    id: completionId,
    object: z.literal('chat.completion.chunk'),
    created: seconds,
    model: z.string(),
    choices: z
      .array(
        z.looseObject({
          index: z.literal(0),
          delta: z.looseObject({
            role: z.literal('assistant').optional(),
            content: z.string().nullable().optional(),
            tool_calls: z.array(toolCallDelta).optional(),
          }),
          finish_reason: finishReason.nullable(),
          logprobs: z.null().optional(),
        }),
      )
      .max(1)
      .meta({ description: 'One choice; none in the last chunk that carries `usage`.' }),
    usage: chatUsageSchema.nullable().optional().meta({
      description: 'In the last chunk, when `stream_options.include_usage` is true.',
    }),
  })
  .meta({ description: 'A `chat.completion.chunk`: `data: <this>`; the stream ends with `data: [DONE]`.' });
