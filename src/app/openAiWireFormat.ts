import { z } from 'zod';
import { errorCodes } from './wireFormat.js';

/**
 * The OpenAI-compatible face (product contract section 11) as zod schemas: the `POST /v1/responses` body airs
 * understands, the Response object, the Model and model list, and OpenAI's error shape. The OpenAPI document
 * (adapters/http/openapi.ts) is generated from them; the type checks there keep them in step with what the face
 * (adapters/http/openai/) really sends.
 */

// ---- The create body (`POST /v1/responses`) ----

const inputTextPart = z
  .looseObject({
    type: z.enum(['input_text', 'output_text']),
    text: z.string(),
  })
  .meta({ description: 'A text part. Images, files and audio parts are refused (airs takes text only).' });

const inputMessage = z
  .looseObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer']),
    content: z.union([z.string(), z.array(inputTextPart)]).meta({
      description: 'A string, or a list of text parts (joined with newlines).',
    }),
  })
  .meta({ description: 'A message of the conversation. Other input items (tool calls, references) are refused.' });

/** The body of `POST /v1/responses`, as the parser in adapters/http/openai/input.ts reads it. */
export const responsesCreateBodySchema = z
  .looseObject({
    model: z.string().meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
    input: z.union([z.string(), z.array(inputMessage).min(1)]).meta({
      description:
        'A string (one user message), or a list of messages. Not only white space; valid Unicode; the text airs ' +
        'stores for it is at most `maxPromptChars` UTF-16 units and at most `maxPromptBytes` (1 MiB) of UTF-8 ' +
        '(a list of messages: the messages as JSON, roles included). `echo` answers the last user message’s text.',
    }),
    instructions: z
      .string()
      .nullable()
      .optional()
      .meta({ description: 'Sent to the model as a leading system message.' }),
    background: z
      .boolean()
      .nullable()
      .optional()
      .meta({
        description:
          '`true`: answer at once with the queued Response, and poll `GET /v1/responses/{id}`. Otherwise the call ' +
          'waits for the result, up to the model’s timeout.',
      }),
    stream: z
      .literal(false)
      .nullable()
      .optional()
      .meta({ description: 'Streaming is not supported: `true` is refused (400).' }),
    tools: z
      .array(z.unknown())
      .max(0)
      .nullable()
      .optional()
      .meta({ description: 'Tools are not supported: a non-empty list is refused (400).' }),
    previous_response_id: z
      .null()
      .optional()
      .meta({ description: 'Not supported (400): send the whole conversation as `input`.' }),
    conversation: z
      .null()
      .optional()
      .meta({ description: 'Not supported (400): send the whole conversation as `input`.' }),
    prompt: z.null().optional().meta({ description: 'Prompt templates are not supported (400).' }),
  })
  .meta({
    description:
      'An OpenAI Responses create body. Other fields (`temperature`, `max_output_tokens`, `metadata`, `store`, ...) ' +
      'are accepted and ignored.',
  });

// ---- The Response object ----

const responseId = z
  .string()
  .regex(/^resp_[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: 'The request’s id under OpenAI’s prefix: `resp_X` is the request `req_X` of `/v1/ai`.',
    examples: ['resp_01a200a5c501Z4hRtm25ulmqvAiCWfMFOQ'],
  });

const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });

export const responseStatuses = ['queued', 'in_progress', 'completed', 'failed', 'cancelled'] as const;

const outputText = z.looseObject({
  type: z.literal('output_text'),
  text: z.string().meta({ description: 'The text the model generated.' }),
  annotations: z.array(z.unknown()),
});

const outputMessage = z
  .looseObject({
    type: z.literal('message'),
    id: z.string().regex(/^msg_/),
    status: z.literal('completed'),
    role: z.literal('assistant'),
    content: z.array(outputText),
  })
  .meta({ description: 'The answer: one assistant message with one `output_text` part.' });

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
    completed_at: seconds.nullable(),
    model: z.string(),
    output: z.array(outputMessage).meta({ description: 'Empty until the request is completed.' }),
    error: z
      .object({ code: z.string(), message: z.string() })
      .nullable()
      .meta({ description: 'Set when `status` is `failed`.' }),
    incomplete_details: z.null(),
    instructions: z.string().nullable().meta({ description: 'Always null: airs does not echo the instructions.' }),
    metadata: z.record(z.string(), z.string()),
    parallel_tool_calls: z.boolean(),
    temperature: z.number().nullable(),
    tool_choice: z.literal('auto'),
    tools: z.array(z.unknown()),
    top_p: z.number().nullable(),
    usage: z.null().meta({ description: 'Always null: airs does not count tokens.' }),
  })
  .meta({ description: 'OpenAI’s Response object, with the fields its SDKs read.' });

// ---- Models ----

export const modelObjectSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('model'),
    created: seconds.meta({ description: 'When this server started (airs keeps no other date for a model).' }),
    owned_by: z.literal('airs'),
  })
  .meta({ description: 'A configured model.' });

export const modelListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(modelObjectSchema) })
  .meta({ description: 'The configured models, in the config’s order.' });

// ---- Errors ----

/** OpenAI's error types, by status (adapters/http/openai/errors.ts). */
export const openAiErrorTypes = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'rate_limit_error',
  'server_error',
] as const;

/** Every error of the OpenAI-compatible routes: OpenAI's shape, with the contract's code in `code`. */
export const openAiErrorSchema = z
  .object({
    error: z.object({
      message: z.string().min(1).meta({ description: 'For humans: what to fix. Never internals.' }),
      type: z.enum(openAiErrorTypes).meta({
        description:
          'By status: 401 `authentication_error`, 403 `permission_error`, 429 `rate_limit_error`, 5xx ' +
          '`server_error`, any other `invalid_request_error`.',
      }),
      param: z.string().nullable().meta({ description: 'The body field at fault, where the parser knows it.' }),
      code: z.enum(errorCodes).meta({ description: 'The contract’s error code, as on `/v1/ai`.' }),
    }),
  })
  .meta({ description: 'OpenAI’s error shape, on the OpenAI-compatible routes.' });
