import { z } from 'zod';
import { servedTierField, serviceTierField } from '../../../app/serviceTierField.js';
import type { ChatMessage, ToolCall } from '../../../ports/ModelProvider.js';
import { errorCodes } from '../wireFormat.js';
import {
  absent,
  brokenUnicode,
  isObject,
  type RawIssue,
  reportedInside,
  restated,
  restatingFaults,
  shown,
} from './wireFaults.js';

/**
 * The OpenAI-compatible face (product contract sections 11 and 13) as zod schemas: the `POST /v1/responses` body airs
 * understands, the Response object and its stream events, the Model and model list, and OpenAI's error shape. The OpenAPI document
 * (adapters/http/openapi.ts) is generated from them; the type checks there keep them in step with what the face
 * (adapters/http/openai/) really sends.
 */

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

/**
 * The body of `POST /v1/responses`: the one description of it. The route parses with it (parseResponsesCreate,
 * adapters/http/openai/input.ts), so does the Batch API for each line of an input file (batchEndpoints.ts), and the
 * OpenAPI document shows it. Each rule carries the words of its refusal; a body that breaks several is refused for the
 * first in the order of the fields below (the order airs has always checked them in). Fields it does not name are
 * accepted and ignored (`store`, `truncation`, `reasoning`, `stream_options`, ...): none of them changes the answer.
 */

const functionNameRule = 'must be at most 64 characters, without spaces or control characters';

/** A function's name, as OpenAI limits it (upstreams refuse longer ones, after the request was queued). */
const functionName = z
  .string('must be a non-empty string')
  .min(1, 'must be a non-empty string')
  .refine((name) => name.length <= 64, functionNameRule)
  .regex(/^[^\s\p{Cc}]*$/u, functionNameRule)
  .meta({ maxLength: 64, description: 'At most 64 UTF-16 units, without spaces or control characters.' });

const optionalString = z.string('must be a string').nullish();
const optionalBoolean = z.boolean('must be true or false').nullish();

/** A JSON Schema: any object, forwarded as given (the very object: read as a record, it would be copied). */
const jsonSchemaObject = z
  .unknown()
  .refine(isObject, 'must be a JSON Schema object')
  .meta({ type: 'object', description: 'A JSON Schema.' });

const numberIn = (min: number, max: number) => {
  const rule = `must be a number from ${min} to ${max}`;
  return z.number(rule).min(min, rule).max(max, rule).nullish();
};

/** A field refused whenever it is given (not null). */
const refused = (message: string, description: string) =>
  z
    .null(message)
    .optional()
    .meta({ description: `Not supported (400): ${description}` });

const inputTextPart = z
  .looseObject(
    {
      type: z.enum(['input_text', 'output_text'], {
        error: (issue) => `part type ${shown(issue.input)} is not supported; airs takes text (input_text) only`,
      }),
      text: z.string('must be a string'),
    },
    'must be an object {"type": "input_text", "text": ...}',
  )
  .meta({ description: 'A text part. Images, files and audio parts are refused (airs takes text only).' });

/** A message's content, or a call's output: a string, or text parts (joined with newlines: textOfContent). */
const textContent = reportedInside(
  z.union([z.string(), z.array(inputTextPart)], 'must be a string or a list of input_text parts'),
  1,
  (issue) => issue.path.length > 0, // a fault of a part
);

const textOfContent = (given: z.output<typeof textContent>) =>
  typeof given === 'string' ? given : given.map((part) => part.text).join('\n');

const inputMessage = z
  .looseObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer'], 'must be one of user, assistant, system, developer'),
    content: textContent.meta({ description: 'A string, or a list of text parts (joined with newlines).' }),
  })
  .meta({
    description: 'A message of the conversation (`id`, `status` and the like, as in an output item, are ignored).',
  });

const callIdRule = 'must be a non-empty string of at most 256 characters';
const callId = z
  .string(callIdRule)
  .min(1, callIdRule)
  .refine((id) => id.length <= 256, callIdRule)
  .meta({ maxLength: 256 });

/** The items of the list being read and the call ids it holds so far: zod reads a list in order and at once. */
const inputCalls = new Set<string>();

const inputFunctionCall = z
  .looseObject({
    type: z.literal('function_call'),
    call_id: callId
      .check((payload) => {
        if (payload.issues.length === 0) inputCalls.add(payload.value);
      })
      .meta({ description: 'The id of the call, which its `function_call_output` names.' }),
    name: z.string('must be a non-empty string').min(1, 'must be a non-empty string'),
    arguments: z
      .string('must be a string (JSON text)')
      .meta({ description: 'The arguments as JSON text, as the model wrote them.' }),
  })
  .meta({
    description:
      'A function call the model made (as in a Response’s `output`): sent as the assistant message’s `tool_calls` ' +
      '(calls in a row, and the assistant message just before them, are one message).',
  });

const inputFunctionCallOutput = z
  .looseObject({
    type: z.literal('function_call_output'),
    call_id: callId
      .check((payload) => {
        const id = payload.value;
        if (payload.issues.length === 0 && !inputCalls.has(id))
          payload.issues.push({
            code: 'custom',
            message: `no function_call with call_id "${id}" comes before this output`,
            input: id,
          });
      })
      .meta({ description: 'A `call_id` of a `function_call` earlier in `input`.' }),
    output: textContent.meta({ description: 'What the function returned.' }),
  })
  .meta({ description: 'The result of a function call: sent as a `tool` message.' });

/** The longest id a reference may name (longer ones name nothing). */
export const itemReferenceIdChars = 300;

/**
 * An `item_reference` as the schema reads it: one the parser did not replace by the item it names (it does so before
 * the schema reads the body, see input.ts) names nothing the caller may see.
 */
const inputItemReference = z
  .looseObject({
    type: z.literal('item_reference'),
    id: z
      .string('must be the id of an output item')
      .min(1, 'must be the id of an output item')
      .check((payload) => {
        const id = payload.value;
        if (payload.issues.length === 0)
          payload.issues.push({
            code: 'custom',
            message:
              `no output item ${JSON.stringify(id.slice(0, 100))} among this account's completed responses (they ` +
              'live 24 hours); send the item itself (with the Vercel AI SDK: providerOptions.openai.store = false)',
            input: id,
          });
      })
      .meta({ description: 'The id of an output item (`msg_…`, `fc_…`).' }),
  })
  .meta({
    description:
      'An output item of one of the account’s completed Responses (they live 24 hours), read as that item: the ' +
      'Vercel AI SDK sends these for earlier answers by default. Any other reference is refused (400).',
  });

const inputItem = z.discriminatedUnion(
  'type',
  [inputMessage, inputFunctionCall, inputFunctionCallOutput, inputItemReference],
  {
    error: (issue) =>
      !isObject(issue.input)
        ? 'must be a message {"role": ..., "content": ...} or an item'
        : issue.input.type === 'reasoning'
          ? 'reasoning items are not supported; leave them out'
          : `item type ${shown(issue.input.type)} is not supported; airs takes messages, function_call and ` +
            'function_call_output',
  },
);

// Restated within the list: a union (`input`'s) keeps its options' faults as they were said.
const inputItems = restatingFaults(
  z.preprocess(
    (value) => {
      inputCalls.clear();
      return value;
    },
    z.array(inputItem).min(1, 'must not be an empty list'),
  ),
);

/** The items of an `input` list, read by the schema. */
export type ResponsesInputItems = z.output<typeof inputItems>;

/**
 * A Responses `input` list read into a chat conversation (the port's messages). A run of `function_call` items
 * becomes one assistant message with `tool_calls` (joined to the assistant message just before it, if any), and
 * each `function_call_output` a `tool` message, as chat completions write a turn that calls tools.
 */
export const conversationOf = (items: ResponsesInputItems): ChatMessage[] => {
  const messages: ChatMessage[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      const call: ToolCall = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments },
      };
      const last = messages.at(-1);
      // A turn's calls (and the text before them) are one assistant message in chat completions.
      if (last?.role === 'assistant') {
        const turn = last as { tool_calls?: ToolCall[] };
        turn.tool_calls = [...(turn.tool_calls ?? []), call];
      } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output')
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOfContent(item.output) });
    else if (item.type !== 'item_reference') messages.push({ role: item.role, content: textOfContent(item.content) });
  }
  return messages;
};

/** The text of a message, `''` for an assistant message that only calls tools. */
const textOfMessage = (message: ChatMessage): string => message.content ?? '';

/**
 * The conversation a body's `input` and `instructions` make: undefined for a string input without instructions
 * (a plain prompt). `instructions` is a leading system message; an empty one is none.
 */
export const responsesConversationOf = (body: {
  readonly input: string | ResponsesInputItems;
  readonly instructions?: string | null | undefined;
}): ChatMessage[] | undefined => {
  const instructions = absent(body.instructions) || body.instructions === '' ? undefined : body.instructions;
  const given =
    typeof body.input === 'string'
      ? instructions === undefined
        ? undefined
        : [{ role: 'user' as const, content: body.input }]
      : conversationOf(body.input);
  return instructions === undefined ? given : [{ role: 'system', content: instructions }, ...(given ?? [])];
};

const inputFault = (body: {
  readonly input: string | ResponsesInputItems;
  readonly instructions?: string | null | undefined;
}): string | undefined => {
  const messages = responsesConversationOf(body);
  const texts = messages?.map(textOfMessage) ?? [body.input as string];
  const callsTools = messages?.some((m) => m.role === 'tool' || (m.role === 'assistant' && m.tool_calls)) === true;
  if (!callsTools && texts.every((text) => text.trim() === '')) return 'must not be empty';
  if (texts.some((text) => brokenUnicode.test(text)))
    return 'must be valid Unicode text; it contains an unpaired surrogate';
  return undefined;
};

/** The names of the tools read so far in the list being read (zod reads a list in order and at once). */
const toolNames = new Set<string>();

const functionTool = z
  .looseObject(
    {
      type: z.literal('function', {
        error: (issue) =>
          `tool type ${shown(issue.input)} is not supported; airs runs function tools only ("type": "function")`,
      }),
      name: functionName
        .check((payload) => {
          const name = payload.value;
          if (payload.issues.length > 0) return; // not a name
          if (toolNames.has(name))
            payload.issues.push({ code: 'custom', message: `the function name "${name}" is given twice`, input: name });
          toolNames.add(name);
        })
        .meta({ description: 'Unique among `tools`; at most 64 characters, no spaces.' }),
      description: optionalString,
      parameters: jsonSchemaObject.nullish(),
      strict: optionalBoolean.meta({
        description: 'Forwarded as given; left out, the upstream’s default applies (chat completions: not strict).',
      }),
    },
    'must be an object {"type": "function", "name": ..., "parameters": ...}',
  )
  .meta({ description: 'A function the model may call. Other tool types (hosted tools) are refused (400).' });

const functionTools = z.preprocess(
  (value) => {
    toolNames.clear();
    return value;
  },
  z.array(functionTool, 'must be a list of function tools'),
);

// The restatement is registered on the union as it runs: after its check (a check makes a new definition).
const toolChoice = reportedInside(
  restatingFaults(
    z.union(
      [
        z.enum(['none', 'auto', 'required']),
        z.looseObject({ type: z.literal('function'), name: z.string('must name one of the functions in tools') }),
      ],
      'must be "none", "auto", "required" or {"type": "function", "name": ...}; other choices are not supported',
    ),
  ),
  1,
  (issue) => issue.path[0] === 'name', // a fault of the function's name
);

/**
 * The rule across fields of a body whose fields were read: a function `tool_choice` names one of `tools`, and
 * `required` needs tools. The fault, or undefined.
 */
const toolChoiceFault = (body: {
  readonly tools?: readonly { readonly name: string }[] | null | undefined;
  readonly tool_choice?: z.output<typeof toolChoice> | null | undefined;
}): { readonly path: PropertyKey[]; readonly message: string } | undefined => {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  if (typeof choice === 'object' && choice !== null)
    return tools.some((tool) => tool.name === choice.name)
      ? undefined
      : { path: ['tool_choice', 'name'], message: 'must name one of the functions in tools' };
  return choice === 'required' && tools.length === 0
    ? { path: ['tool_choice'], message: '"required" needs tools' }
    : undefined;
};

/**
 * The rules across fields of a body whose fields were read (those in `faulty` were not: their rules wait): `input`
 * and `instructions` hold text, and `tool_choice` names one of `tools`. Their faults, in the order of the fields.
 */
export const responsesCrossFieldFaults = (
  body: Parameters<typeof inputFault>[0] & Parameters<typeof toolChoiceFault>[0],
  faulty: ReadonlySet<PropertyKey | undefined> = new Set(),
): { readonly path: PropertyKey[]; readonly message: string }[] => {
  const faults: { readonly path: PropertyKey[]; readonly message: string }[] = [];
  if (!faulty.has('input') && !faulty.has('instructions')) {
    const fault = inputFault(body);
    if (fault !== undefined) faults.push({ path: ['input'], message: fault });
  }
  if (!faulty.has('tools') && !faulty.has('tool_choice')) {
    const fault = toolChoiceFault(body);
    if (fault !== undefined) faults.push(fault);
  }
  return faults;
};

const textFormat = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('text') }),
    z.looseObject({ type: z.literal('json_object') }),
    z.looseObject({
      type: z.literal('json_schema'),
      name: functionName,
      schema: jsonSchemaObject.meta({ description: 'The JSON Schema the answer follows.' }),
      description: optionalString,
      strict: optionalBoolean,
    }),
  ],
  {
    error: (issue) =>
      !isObject(issue.input) ? 'must be an object {"type": ...}' : 'must be "text", "json_object" or "json_schema"',
  },
);

const maxOutputTokensRule = 'must be a whole number of at least 1';

const logprobsInclude = 'message.output_text.logprobs';

/** The body of `POST /v1/responses`, in the order its fields are checked. */
export const responsesCreateBodySchema = z
  .looseObject(
    {
      model: z
        .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
        .meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
      previous_response_id: refused(
        'previous_response_id is not supported; send the whole conversation as input',
        'send the whole conversation as `input`.',
      ),
      conversation: refused(
        'conversation is not supported; send the whole conversation as input',
        'send the whole conversation as `input`.',
      ),
      prompt: refused('prompt templates are not supported; send the text as input', 'prompt templates.'),
      background: optionalBoolean.meta({
        description:
          '`true`: answer at once with the queued Response, and poll `GET /v1/responses/{id}`. Otherwise the call ' +
          'waits until the request is final (`completed`, `failed` or `cancelled`), and cancels it if the caller ' +
          'goes away first.',
      }),
      stream: optionalBoolean.meta({
        description:
          '`true`: answer with the Response’s events (`text/event-stream`). A stream that is not `background` ' +
          'cancels its request when the caller goes away.',
      }),
      instructions: optionalString.meta({ description: 'Sent to the model as a leading system message.' }),
      // The restatement is registered on the union as it runs: after its check (a check makes a new definition).
      input: restated(
        restatingFaults(
          z.union([z.string(), inputItems], {
            error: (issue) => (absent(issue.input) ? 'is required' : 'must be a string or a list of messages'),
          }),
        ),
        // A list is refused for what is wrong inside it.
        (issue) =>
          issue.code === 'invalid_union' && Array.isArray(issue.input)
            ? ((issue.errors[1] ?? []) as RawIssue[])
            : undefined,
      )
        // Required (the list's reading takes anything first, so zod would take the union as optional).
        .nonoptional('is required')
        .meta({
          description:
            'A string (one user message), or a list of messages and function call items. Not only white space; valid ' +
            'Unicode (`instructions` included); the text airs stores for it is at most `maxPromptChars` UTF-16 units ' +
            'and at most `maxPromptBytes` (1 MiB) of UTF-8 (a list: the conversation and the generation settings as ' +
            'JSON). `echo` answers the last user message’s text. Reasoning items, and other items airs cannot send a ' +
            'model, are refused (400).',
        }),
      // Fields that would change the answer and that airs cannot honour: refused, never ignored.
      top_logprobs: z
        .literal(0, 'log probabilities are not supported')
        .nullish()
        .meta({ description: 'Log probabilities are not supported (400 unless 0).' }),
      include: z
        .unknown()
        .check((payload) => {
          const value = payload.value;
          if (Array.isArray(value) && value.includes(logprobsInclude))
            payload.issues.push({
              code: 'custom',
              message: `log probabilities (${logprobsInclude}) are not supported`,
              input: value,
            });
        })
        .optional()
        .meta({
          not: { type: 'array', contains: { const: logprobsInclude } },
          description: `Accepted and ignored, except a list holding \`${logprobsInclude}\` (400).`,
        }),
      max_tool_calls: refused(
        'is not supported; the model answers with one round of tool calls at most',
        'the model answers with one round of tool calls at most.',
      ),
      temperature: numberIn(0, 2),
      top_p: numberIn(0, 1),
      max_output_tokens: z
        .number(maxOutputTokensRule)
        .refine(Number.isSafeInteger, maxOutputTokensRule)
        .min(1, maxOutputTokensRule)
        .meta({
          type: 'integer',
          maximum: Number.MAX_SAFE_INTEGER,
          description: 'Sent upstream as `max_completion_tokens` (the tokens the model writes, reasoning included).',
        })
        .nullish(),
      user: optionalString,
      parallel_tool_calls: optionalBoolean,
      tools: functionTools.nullish().meta({ description: 'Names are unique.' }),
      tool_choice: toolChoice.nullish().meta({
        description: '`required` needs `tools`; a function named must be one of `tools`.',
      }),
      text: z
        .looseObject(
          {
            verbosity: z
              .null('is not supported; leave it out (the model answers at its own length)')
              .optional()
              .meta({ description: 'Not supported (400).' }),
            format: textFormat.nullish(),
          },
          'must be an object {"format": ...}',
        )
        .nullish()
        .meta({ description: 'The answer’s format, sent upstream as `response_format`.' }),
      metadata: metadataField,
      service_tier: serviceTierField,
    },
    'the body must be a JSON object with "model" and "input"',
  )
  .superRefine(
    (body, payload) => {
      // Rules across fields, once the fields they read were read without a fault.
      const faulty = new Set(payload.issues.map((issue) => issue.path?.[0]));
      for (const fault of responsesCrossFieldFaults(body, faulty)) payload.addIssue({ code: 'custom', ...fault });
    },
    { when: (payload) => isObject(payload.value) },
  )
  .meta({
    description:
      'An OpenAI Responses create body. Fields that do not change the answer (`store`, `truncation`, ' +
      '`prompt_cache_key`, `safety_identifier`, `reasoning`, `stream_options`, ...) are accepted ' +
      'and ignored.',
  });

/** A Responses body read by the schema. */
export type ResponsesCreateBody = z.output<typeof responsesCreateBodySchema>;

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
      code: z.enum([...errorCodes, 'model_not_found']).meta({
        description:
          'The contract’s error code, as on `/v1/ai`; `model_not_found` (404) for a model that does not exist for ' +
          'the account (not configured, or not among its `allowedModels`), as OpenAI answers it.',
      }),
    }),
  })
  .meta({ description: 'OpenAI’s error shape, on the OpenAI-compatible routes.' });
