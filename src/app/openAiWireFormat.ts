import { z } from 'zod';
import { errorCodes } from './wireFormat.js';

/**
 * The OpenAI-compatible face (product contract sections 11 and 13) as zod schemas: the `POST /v1/responses` body airs
 * understands, the Response object and its stream events, the Model and model list, and OpenAI's error shape. The OpenAPI document
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
  .meta({
    description: 'A message of the conversation (`id`, `status` and the like, as in an output item, are ignored).',
  });

const callId = z.string().min(1).max(256);

const inputFunctionCall = z
  .looseObject({
    type: z.literal('function_call'),
    call_id: callId.meta({ description: 'The id of the call, which its `function_call_output` names.' }),
    name: z.string().min(1),
    arguments: z.string().meta({ description: 'The arguments as JSON text, as the model wrote them.' }),
  })
  .meta({
    description:
      'A function call the model made (as in a Response’s `output`): sent as the assistant message’s `tool_calls` ' +
      '(calls in a row, and the assistant message just before them, are one message).',
  });

const inputFunctionCallOutput = z
  .looseObject({
    type: z.literal('function_call_output'),
    call_id: callId.meta({ description: 'A `call_id` of a `function_call` earlier in `input`.' }),
    output: z.union([z.string(), z.array(inputTextPart)]).meta({ description: 'What the function returned.' }),
  })
  .meta({ description: 'The result of a function call: sent as a `tool` message.' });

const inputItemReference = z
  .looseObject({
    type: z.literal('item_reference'),
    id: z.string().min(1).meta({ description: 'The id of an output item (`msg_…`, `fc_…`).' }),
  })
  .meta({
    description:
      'An output item of one of the account’s completed Responses (they live 24 hours), read as that item: the ' +
      'Vercel AI SDK sends these for earlier answers by default. Any other reference is refused (400).',
  });

const functionName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[^\s\p{Cc}]+$/u);

const functionTool = z
  .looseObject({
    type: z.literal('function'),
    name: functionName.meta({ description: 'Unique among `tools`; at most 64 characters, no spaces.' }),
    description: z.string().nullable().optional(),
    parameters: z.record(z.string(), z.unknown()).nullable().optional().meta({ description: 'A JSON Schema.' }),
    strict: z.boolean().nullable().optional().meta({
      description: 'Forwarded as given; left out, the upstream’s default applies (chat completions: not strict).',
    }),
  })
  .meta({ description: 'A function the model may call. Other tool types (hosted tools) are refused (400).' });

const toolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.looseObject({ type: z.literal('function'), name: z.string() }),
]);

const textFormat = z.union([
  z.looseObject({ type: z.literal('text') }),
  z.looseObject({ type: z.literal('json_object') }),
  z.looseObject({
    type: z.literal('json_schema'),
    name: functionName,
    schema: z.record(z.string(), z.unknown()).meta({ description: 'The JSON Schema the answer follows.' }),
    description: z.string().nullable().optional(),
    strict: z.boolean().nullable().optional(),
  }),
]);

/**
 * A create's `metadata` (`POST /v1/responses`, `POST /v1/chat/completions`), bounded as OpenAI bounds it: an object of
 * at most 16 pairs, each key at most 64 characters, each value a string of at most 512 characters.
 *
 * Keys hold no control characters; values none but tab, line feed and carriage return (text may span lines, and
 * every place airs shows metadata writes it as JSON). NUL is refused everywhere (PostgreSQL cannot store it), and so
 * is an unpaired surrogate (storage would turn it into U+FFFD, and the metadata shown would differ from what was sent).
 */
export const metadataBounds = { pairs: 16, keyChars: 64, valueChars: 512 } as const;

/** Characters, as OpenAI (and JSON Schema's `maxLength`) count them: code points, not UTF-16 units. */
const charsOf = (text: string) => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

const controlInKey = /\p{Cc}/u;
const controlInValue = /(?![\t\n\r])\p{Cc}/u;
const brokenUnicode = /\p{Cs}/u;

const shownKey = (key: string) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);

/** Why a given (not null) `metadata` is refused, in the words of the refusal; undefined when it is within bounds. */
export const metadataRefusal = (value: unknown): string | undefined => {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'must be an object of string keys and string values';
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > metadataBounds.pairs)
    return `must hold at most ${metadataBounds.pairs} key-value pairs; it holds ${entries.length}`;
  for (const [key, pair] of entries) {
    if (charsOf(key) > metadataBounds.keyChars)
      return `keys must be at most ${metadataBounds.keyChars} characters long; ${shownKey(key)} is longer`;
    if (controlInKey.test(key) || brokenUnicode.test(key)) return 'keys must be text without control characters';
    if (typeof pair !== 'string') return `the value of ${shownKey(key)} must be a string`;
    if (charsOf(pair) > metadataBounds.valueChars)
      return `values must be at most ${metadataBounds.valueChars} characters long; the value of ${shownKey(key)} is longer`;
    if (controlInValue.test(pair) || brokenUnicode.test(pair))
      return `the value of ${shownKey(key)} must be text without control characters (other than tab and line breaks)`;
  }
  return undefined;
};

/**
 * A create's `metadata` as the document shows it. Its bounds count code points, which zod's `.max` does not: they
 * are checked by metadataRefusal (metadataField), and shown here as JSON Schema counts them.
 */
export const metadataSchema = z
  .record(
    z.string().meta({ maxLength: metadataBounds.keyChars }),
    z.string().meta({ maxLength: metadataBounds.valueChars }),
  )
  .meta({
    maxProperties: metadataBounds.pairs,
    description:
      'Up to 16 pairs; keys at most 64 characters, without control characters; values strings of at most 512 ' +
      'characters, without control characters other than tab and line breaks (400 `invalid_request_error`, ' +
      '`param: "metadata"`, beyond). Kept with the request and shown in its Response (create, retrieve, stream, ' +
      'cancel); never sent to a model.',
  });

/** `metadata` as a field of a create's body: absent or null is none; beyond the bounds, refused naming `metadata`. */
export const metadataField = z.preprocess((value, payload) => {
  const refusal = value === undefined || value === null ? undefined : metadataRefusal(value);
  if (refusal !== undefined) payload.addIssue({ code: 'custom', message: refusal, input: value });
  return value;
}, metadataSchema.nullish());

/** The body of `POST /v1/responses`, as the parser in adapters/http/openai/input.ts reads it. */
export const responsesCreateBodySchema = z
  .looseObject({
    model: z.string().meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
    input: z
      .union([
        z.string(),
        z.array(z.union([inputMessage, inputFunctionCall, inputFunctionCallOutput, inputItemReference])).min(1),
      ])
      .meta({
        description:
          'A string (one user message), or a list of messages and function call items. Not only white space; valid ' +
          'Unicode; the text airs stores for it is at most `maxPromptChars` UTF-16 units and at most ' +
          '`maxPromptBytes` (1 MiB) of UTF-8 (a list: the conversation and the generation settings as JSON). ' +
          '`echo` answers the last user message’s text. Reasoning items, and other items airs cannot send a model, ' +
          'are refused (400).',
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
          'waits until the request is final (`completed`, `failed` or `cancelled`), and cancels it if the caller ' +
          'goes away first.',
      }),
    stream: z
      .boolean()
      .nullable()
      .optional()
      .meta({
        description:
          '`true`: answer with the Response’s events (`text/event-stream`). A stream that is not `background` ' +
          'cancels its request when the caller goes away.',
      }),
    tools: z.array(functionTool).nullable().optional(),
    tool_choice: toolChoice.nullable().optional().meta({
      description: '`required` needs `tools`; a function named must be one of `tools`.',
    }),
    parallel_tool_calls: z.boolean().nullable().optional(),
    text: z
      .looseObject({
        format: textFormat.nullable().optional(),
        verbosity: z.null().optional().meta({ description: 'Not supported (400).' }),
      })
      .nullable()
      .optional()
      .meta({ description: 'The answer’s format, sent upstream as `response_format`.' }),
    temperature: z.number().min(0).max(2).nullable().optional(),
    top_p: z.number().min(0).max(1).nullable().optional(),
    max_output_tokens: z.int().min(1).nullable().optional().meta({
      description: 'Sent upstream as `max_completion_tokens` (the tokens the model writes, reasoning included).',
    }),
    user: z.string().nullable().optional(),
    top_logprobs: z.literal(0).nullable().optional().meta({ description: 'Log probabilities are not supported.' }),
    include: z
      .array(z.string().regex(/^(?!message\.output_text\.logprobs$)/))
      .nullable()
      .optional()
      .meta({ description: 'Accepted and ignored, except `message.output_text.logprobs` (400).' }),
    max_tool_calls: z.null().optional().meta({ description: 'Not supported (400).' }),
    previous_response_id: z
      .null()
      .optional()
      .meta({ description: 'Not supported (400): send the whole conversation as `input`.' }),
    conversation: z
      .null()
      .optional()
      .meta({ description: 'Not supported (400): send the whole conversation as `input`.' }),
    prompt: z.null().optional().meta({ description: 'Prompt templates are not supported (400).' }),
    metadata: metadataSchema.nullable().optional(),
  })
  .meta({
    description:
      'An OpenAI Responses create body. Fields that do not change the answer (`store`, `truncation`, ' +
      '`service_tier`, `prompt_cache_key`, `safety_identifier`, `reasoning`, `stream_options`, ...) are accepted ' +
      'and ignored.',
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

const outputItem = z.union([outputMessage, outputFunctionCall]);

const usage = z
  .object({
    input_tokens: z.int().min(0),
    input_tokens_details: z.object({ cached_tokens: z.literal(0) }),
    output_tokens: z.int().min(0),
    output_tokens_details: z.object({ reasoning_tokens: z.literal(0) }),
    total_tokens: z.int().min(0),
  })
  .meta({
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
      .object({
        code: z.literal('server_error'),
        message: z.string(),
        type: z.literal('server_error'),
        param: z.null(),
      })
      .nullable()
      .meta({ description: 'Set when `status` is `failed`.' }),
    incomplete_details: z
      .object({ reason: z.enum(['max_output_tokens', 'content_filter']) })
      .nullable()
      .meta({ description: 'Why a completed answer stopped short: out of tokens, or filtered by the upstream.' }),
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
  })
  .meta({
    description:
      'OpenAI’s Response object, with the fields its SDKs read. The settings (`temperature`, `text`, `tools`, ...) ' +
      'are echoed in the answers of the create that made it (without function `parameters` or a format’s ' +
      '`schema`); a retrieve shows OpenAI’s defaults.',
  });

// ---- The Response's events (`stream: true`, `GET /v1/responses/{id}?stream=true`) ----

const sequenceNumber = z
  .int()
  .min(0)
  .meta({
    description:
      'The event’s place in this stream, from 0. A stream of a finished request is the same every time; ' +
      '`starting_after=N` leaves out the events numbered N and lower.',
  });

const event = <T extends string, S extends z.core.$ZodLooseShape>(type: T, shape: S, description: string) =>
  z.looseObject({ type: z.literal(type), ...shape, sequence_number: sequenceNumber }).meta({ description });

const inMessage = { item_id: z.string().regex(/^msg_/), output_index: z.int().min(0), content_index: z.literal(0) };
const inCall = { item_id: z.string().regex(/^fc_/), output_index: z.int().min(0) };
const noLogprobs = z.array(z.never()).max(0);

/** One event of a Response stream (adapters/http/openai/responseEvents.ts writes them). */
export const responseStreamEventSchema = z
  .union([
    event('response.created', { response: responseObjectSchema }, 'The first event: the Response, queued.'),
    event(
      'response.in_progress',
      { response: responseObjectSchema },
      'A worker has the request (or it was seen finished).',
    ),
    event('response.output_item.added', { output_index: z.int().min(0), item: outputItem }, 'An output item opens.'),
    event('response.content_part.added', { ...inMessage, part: outputText }, 'The message’s text part opens, empty.'),
    event(
      'response.output_text.delta',
      { ...inMessage, delta: z.string(), logprobs: noLogprobs },
      'A piece of the text: live from the upstream, or the whole (remaining) text once the request completed.',
    ),
    event('response.output_text.done', { ...inMessage, text: z.string(), logprobs: noLogprobs }, 'The whole text.'),
    event('response.content_part.done', { ...inMessage, part: outputText }, 'The text part, whole.'),
    event('response.output_item.done', { output_index: z.int().min(0), item: outputItem }, 'An output item, whole.'),
    event(
      'response.function_call_arguments.delta',
      { ...inCall, delta: z.string() },
      'A function call’s arguments (all at once: calls are known when the request completes).',
    ),
    event(
      'response.function_call_arguments.done',
      { ...inCall, name: z.string(), arguments: z.string() },
      'A function call’s arguments, whole.',
    ),
    event('response.completed', { response: responseObjectSchema }, 'The last event: the completed Response.'),
    event('response.failed', { response: responseObjectSchema }, 'The last event: the failed Response, with `error`.'),
    event(
      'error',
      {
        code: z.enum(['cancelled', 'not_found', 'stream_interrupted']),
        message: z.string(),
        param: z.null(),
        error: z.object({
          type: z.enum(['invalid_request_error', 'server_error']),
          code: z.enum(['cancelled', 'not_found', 'stream_interrupted']),
          message: z.string(),
          param: z.null(),
        }),
      },
      'The last event when there will be no answer on this stream: the request was cancelled (`cancelled`) or ' +
        'expired (`not_found`), or an attempt whose text was already streamed failed (`stream_interrupted`: the ' +
        'request is tried again; retrieve it). The official SDKs raise it as an APIError.',
    ),
  ])
  .meta({ description: 'One event of a Response stream, `event: <type>` and `data: <this>`.' });

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
