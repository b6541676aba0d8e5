import { z } from 'zod';
import { servedTierField, serviceTierField } from '../../../../app/serviceTierField.js';
import type { ChatMessage, FunctionTool, ResponseFormat, ToolChoice } from '../../../../ports/ModelProvider.js';
import {
  absent,
  brokenUnicode,
  isObject,
  type RawIssue,
  reportedInside,
  restated,
  restatingFaults,
  shown,
} from '../wireFaults.js';
import { metadataField } from '../wireFormat.js';

/**
 * `POST /v1/chat/completions` (product contract section 13) as zod schemas: the body airs understands, the
 * `chat.completion` answer and the `chat.completion.chunk` of its stream, in the shapes the official SDKs, vLLM and
 * llama.cpp use. The OpenAPI document (adapters/http/openapi.ts) is generated from them. Errors are OpenAI's shape
 * (openai/wireFormat.ts).
 */

// ---- The body ----
//
// The one description of the body: the route parses it with this schema (adapters/http/openai/chat/request.ts),
// so does the Batch API for each line of an input file (adapters/http/openai/batchEndpoints.ts), and the OpenAPI
// document shows it. Each rule carries the words of its refusal. A body that breaks several rules is refused for the
// first in the order of the fields below, unknown fields just before `stream` (the order airs has always checked
// them in).

/** Bounds of what airs keeps with a request (the text of messages and schemas is bounded as stored text). */
export const chatBounds = {
  /** OpenAI's own limit. */
  tools: 128,
  toolCallsPerMessage: 128,
  stopSequences: 16,
  /** Ids of tool calls, `user`: short identifiers, not text. */
  idChars: 256,
  userChars: 256,
  maxTokens: 2_147_483_647,
} as const;

/** The field read just after unknown fields are refused (the parser places their refusal there). */
export const chatUnknownFieldsBefore = 'stream';

/** At most `max` UTF-16 units, as airs counts an identifier (zod's `.max` counts code points). */
const unitsAtMost = (schema: z.ZodString, max: number, message: string) =>
  schema.refine((value) => value.length <= max, message).meta({ description: `At most ${max} UTF-16 units.` });

/**
 * A list whose length is checked before its items: one too long is refused as such, whatever it holds. (zod's own
 * `.max` refuses first too, but its fault ends the read of all that holds the list, restatements included.)
 * `onRead` runs as the list is about to be read.
 */
const boundedList = <T extends z.ZodType>(
  item: T,
  max: number,
  notList: string,
  tooLong: string,
  onRead?: () => void,
) =>
  z.preprocess(
    (value, payload) => {
      onRead?.();
      if (Array.isArray(value) && value.length > max)
        payload.addIssue({ code: 'custom', message: tooLong, input: value });
      return value;
    },
    // Refused above first, so this .max never fires: it shows the bound in the document.
    z.array(item, notList).max(max, tooLong),
  );

/** A field refused (naming it as a whole) unless it is what `schema` allows, or absent. */
const refusedUnless = <T extends z.ZodType>(schema: T, message: string) =>
  z.union([schema, z.null()], message).optional();

/** A field refused whenever it is given (not null). */
const refused = (message: string) =>
  z
    .null(message)
    .optional()
    .meta({ description: `Refused (400): ${message}.` });

const optionalString = z.string('must be a string').nullish();
const optionalBoolean = z.boolean('must be true or false').nullish();

const numberIn = (min: number, max: number) => {
  const rule = `must be a number from ${min} to ${max}`;
  return z.number(rule).min(min, rule).max(max, rule).nullish();
};

const tokens = () => {
  const rule = `must be an integer from 1 to ${chatBounds.maxTokens}`;
  // int32: the bound is the format's own (its maximum is chatBounds.maxTokens), one check the fewer.
  return z.int32(rule).min(1, rule).nullish();
};

const functionNamePattern = /^[A-Za-z0-9_-]{1,64}$/;
const functionNameRule = 'must be 1 to 64 letters, digits, _ or -';
/** A function's name as OpenAI takes it. */
const functionName = z.string(functionNameRule).regex(functionNamePattern, functionNameRule);

const shortId = unitsAtMost(
  z.string('must be a non-empty string').min(1, 'must be a non-empty string'),
  chatBounds.idChars,
  `must be at most ${chatBounds.idChars} characters long`,
);

/**
 * A JSON Schema: any object, forwarded as given (the very object: read as a record, it would be copied key by key).
 * Its type is shown in the document by hand, as the check is not one zod can show.
 */
const jsonSchemaObject = z
  .unknown()
  .refine(isObject, 'must be a JSON schema object')
  .meta({ type: 'object' })
  .nullish()
  .meta({ description: 'A JSON Schema.' });

const textPart = z
  .object(
    {
      type: z.literal('text', {
        error: (issue) =>
          `content part type ${shown(issue.input)} is not supported; airs takes text parts only (no images, audio or files)`,
      }),
      text: z.string('must be a string'),
    },
    'must be an object {"type": "text", "text": ...}',
  )
  .meta({ description: 'A text part. Image, audio and file parts are refused (400).' });

/** A message's content: a string, or text parts (joined with newlines: textOf). */
const content = reportedInside(
  z.union([z.string(), z.array(textPart)], 'must be a string or a list of text parts'),
  1,
  (issue) => issue.path.length > 0, // a fault of a part
).meta({ description: 'A string, or a list of text parts (joined with newlines).' });

const toolCall = z
  .object(
    {
      id: shortId,
      type: z.literal('function', {
        error: (issue) => `tool call type ${shown(issue.input)} is not supported; only function`,
      }),
      function: z.object(
        {
          name: functionName,
          arguments: z
            .string('must be a string (the arguments as JSON text)')
            .meta({ description: 'JSON text, as the model wrote it.' }),
        },
        'must be an object {"name", "arguments"}',
      ),
    },
    'must be an object {"id", "type": "function", "function"}',
  )
  .meta({ description: 'A call of a function tool.' });

/** `name` on a message other than a tool's. */
const participantName = z
  .literal('', 'participant names are not supported; put the name in the content')
  .nullish()
  .meta({ description: 'Participant names are not supported (400); an empty one is ignored.' });

const textMessage = z.object({ name: participantName, role: z.enum(['system', 'developer', 'user']), content });

const assistantMessage = z
  .object({
    name: participantName,
    role: z.literal('assistant'),
    audio: z.null('is not supported').optional().meta({ description: 'Not supported (400).' }),
    function_call: z.null('is not supported').optional().meta({ description: 'Not supported (400).' }),
    refusal: z.string('must be a string or null').nullish(),
    tool_calls: boundedList(
      toolCall,
      chatBounds.toolCallsPerMessage,
      'must be a list of tool calls',
      `must hold at most ${chatBounds.toolCallsPerMessage} tool calls`,
    ).nullish(),
    content: content.nullish().meta({ description: 'Required unless the message has `tool_calls`.' }),
  })
  .check((payload) => {
    const message = payload.value;
    if (absent(message.content) && (message.tool_calls ?? []).length === 0)
      payload.issues.push({
        code: 'custom',
        path: ['content'],
        message: 'is required unless the message has tool_calls',
        input: message.content,
      });
  });

const toolMessageName = 'must be the function’s name: 1 to 64 letters, digits, _ or -';

const toolMessage = z.object({
  name: z
    .string(toolMessageName)
    .regex(functionNamePattern, toolMessageName)
    .nullish()
    .meta({ description: 'The function’s name (LangChain sends it); not forwarded: the call answered names it.' }),
  role: z.literal('tool'),
  tool_call_id: shortId,
  content,
});

const message = restated(
  z.discriminatedUnion('role', [textMessage, assistantMessage, toolMessage], {
    error: (issue) =>
      !isObject(issue.input)
        ? 'must be a message {"role": ..., "content": ...}'
        : issue.input.role === 'function'
          ? 'function messages are not supported; send tool messages'
          : 'must be one of system, developer, user, assistant, tool',
  }),
  // A message of another role has its name checked first, as a message of a known role has.
  (issue) => {
    if (issue.code !== 'invalid_union' || !isObject(issue.input)) return undefined;
    const name = participantName.safeParse(issue.input.name);
    return name.success
      ? undefined
      : name.error.issues.map((fault): RawIssue => ({ ...fault, path: ['name', ...fault.path], input: undefined }));
  },
);

type ReadMessage = z.output<typeof message>;

const textOf = (given: z.output<typeof content>) =>
  typeof given === 'string' ? given : given.map((part) => part.text).join('\n');

/** A message read by the schema as airs keeps it: its text joined, and only what is forwarded. */
export const chatMessageOf = (read: ReadMessage): ChatMessage => {
  if (read.role === 'tool') return { role: 'tool', tool_call_id: read.tool_call_id, content: textOf(read.content) };
  if (read.role !== 'assistant') return { role: read.role, content: textOf(read.content) };
  const calls = read.tool_calls ?? [];
  if (absent(read.content)) return { role: 'assistant', content: null, tool_calls: calls };
  const text = textOf(read.content);
  return calls.length === 0
    ? { role: 'assistant', content: text }
    : { role: 'assistant', content: text, tool_calls: calls };
};

/** A tool read by the schema as airs keeps it: unset (null) fields left out. */
export const functionToolOf = ({ function: read }: z.output<typeof functionTools>[number]): FunctionTool => {
  const fn: { -readonly [K in keyof FunctionTool['function']]: FunctionTool['function'][K] } = { name: read.name };
  if (!absent(read.description)) fn.description = read.description;
  if (!absent(read.parameters)) fn.parameters = read.parameters;
  if (!absent(read.strict)) fn.strict = read.strict;
  return { type: 'function', function: fn };
};

const functionTools = (() => {
  // The names of the tools read so far in the list being read. zod reads a list in order and at once, so a
  // duplicate is refused where it stands, before the rest of its tool; the list forgets them as it starts.
  const named = new Set<string>();
  const tool = z
    .object(
      {
        type: z.literal('function', {
          error: (issue) => `tool type ${shown(issue.input)} is not supported; airs takes function tools only`,
        }),
        function: z.object(
          {
            name: functionName.check((payload) => {
              const name = payload.value;
              if (payload.issues.length > 0) return; // not a name
              if (named.has(name))
                payload.issues.push({ code: 'custom', message: `another tool is already named ${name}`, input: name });
              named.add(name);
            }),
            description: optionalString,
            parameters: jsonSchemaObject,
            strict: optionalBoolean,
          },
          'must be an object {"name", "parameters"}',
        ),
      },
      'must be an object {"type": "function", "function": ...}',
    )
    .meta({ description: 'A function the model may call. Other tool types are refused (400).' });
  return boundedList(
    tool,
    chatBounds.tools,
    'must be a list of function tools',
    `must hold at most ${chatBounds.tools} tools`,
    () => named.clear(),
  );
})();

const responseFormat = z
  .discriminatedUnion(
    'type',
    [
      z.object({ type: z.literal('text') }),
      z.object({ type: z.literal('json_object') }),
      z.object({
        type: z.literal('json_schema'),
        json_schema: z.object(
          {
            name: functionName,
            description: optionalString,
            schema: jsonSchemaObject,
            strict: optionalBoolean,
          },
          'must be an object {"name", "schema"}',
        ),
      }),
    ],
    {
      error: (issue) =>
        !isObject(issue.input) ? 'must be an object with a type' : 'must be one of text, json_object, json_schema',
    },
  )
  .transform((format): ResponseFormat => {
    if (format.type !== 'json_schema') return { type: format.type };
    const { name, description, schema, strict } = format.json_schema;
    return {
      type: 'json_schema',
      json_schema: {
        name,
        ...(absent(description) ? {} : { description }),
        ...(absent(schema) ? {} : { schema }),
        ...(absent(strict) ? {} : { strict }),
      },
    };
  });

// The restatement is registered on the union as it runs: after its check (a check makes a new definition).
const toolChoice = reportedInside(
  restatingFaults(
    z.union(
      [
        z.enum(['none', 'auto', 'required']),
        z.object({
          type: z.literal('function'),
          function: z.object({ name: z.string('must name one of the tools') }),
        }),
      ],
      'must be none, auto, required or {"type": "function", "function": {"name"}}',
    ),
  ),
  1,
  (issue) => issue.path.length > 1, // a fault of the function's name
);

const acceptedString = z.string('must be a string').nullish().meta({ description: 'Accepted and ignored.' });

/**
 * The rule across fields of a body whose fields were read: a function `tool_choice` names one of `tools`, and
 * `required` needs tools. The fault, or undefined.
 */
export const toolChoiceFault = (body: {
  readonly tools?: readonly { readonly function: { readonly name: string } }[] | null | undefined;
  readonly tool_choice?: ToolChoice | null | undefined;
}): { readonly path: PropertyKey[]; readonly message: string } | undefined => {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  if (typeof choice === 'object' && choice !== null)
    return tools.some((tool) => tool.function.name === choice.function.name)
      ? undefined
      : { path: ['tool_choice', 'function', 'name'], message: 'must name one of the tools' };
  return choice === 'required' && tools.length === 0
    ? { path: ['tool_choice'], message: 'required needs tools' }
    : undefined;
};

/** The body of `POST /v1/chat/completions`, in the order its fields are checked. */
export const chatCompletionCreateBodySchema = z
  .strictObject(
    {
      model: z
        .string({ error: (issue) => (absent(issue.input) ? 'is required' : 'must be a string') })
        .meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
      messages: restatingFaults(
        z
          .array(message, { error: (issue) => (absent(issue.input) ? 'is required' : 'must be a list of messages') })
          .min(1, 'must not be an empty list')
          .check((payload) => {
            const read = payload.value;
            const texts = read.map((m) => (absent(m.content) ? '' : textOf(m.content)));
            const callsTools = read.some((m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0);
            const fault =
              !callsTools && texts.every((text) => text.trim() === '')
                ? 'must not be empty (every message holds only white space)'
                : texts.some((text) => brokenUnicode.test(text))
                  ? 'must be valid Unicode text; it contains an unpaired surrogate'
                  : undefined;
            if (fault !== undefined) payload.issues.push({ code: 'custom', message: fault, input: read });
          }),
      ).meta({
        description:
          'The conversation. `echo` answers the last user message’s text; the `openai` provider sends them all. ' +
          'Not only white space; valid Unicode. The stored conversation (with its parameters) is at most ' +
          '`maxPromptChars` and `maxPromptBytes`.',
      }),
      // Fields that would change the answer and that airs cannot honour: refused, never ignored (contract 13).
      audio: refused('audio output is not supported; airs answers text'),
      functions: refused('functions (the deprecated form of tools) are not supported; send tools'),
      function_call: refused('function_call (the deprecated form of tool_choice) is not supported; send tool_choice'),
      prediction: refused('predicted outputs are not supported'),
      reasoning_effort: refused('reasoning_effort is not supported by airs'),
      verbosity: refused('verbosity is not supported by airs'),
      web_search_options: refused('web search is not supported'),
      // ... and those refused only when they ask for something.
      n: z.literal(1, 'only 1 choice is supported').nullish().meta({ description: 'Only 1 (400 otherwise).' }),
      logprobs: z
        .literal(false, 'log probabilities are not supported')
        .nullish()
        .meta({ description: 'Not supported (400 when true).' }),
      top_logprobs: refused('log probabilities are not supported'),
      modalities: refusedUnless(z.array(z.literal('text')), 'only ["text"] is supported'),
      logit_bias: refusedUnless(z.record(z.string(), z.never()), 'logit_bias is not supported').meta({
        description: 'Not supported (400), but empty.',
      }),
      // Accepted and not forwarded: storage, billing, caching and abuse-tracking hints of OpenAI's own service, which
      // cannot change the answer's text. (`metadata`, below, is kept with the request.)
      store: z.boolean('must be a boolean').nullish().meta({ description: 'Accepted and ignored.' }),
      service_tier: serviceTierField,
      prompt_cache_key: acceptedString,
      prompt_cache_retention: acceptedString,
      safety_identifier: acceptedString,
      stream: optionalBoolean.meta({
        description:
          '`true`: answer with `chat.completion.chunk` events (`text/event-stream`), then `data: [DONE]`; the request ' +
          'is cancelled when the caller goes away.',
      }),
      stream_options: z
        .strictObject(
          {
            include_usage: optionalBoolean,
            include_obfuscation: optionalBoolean.meta({ description: 'Accepted and ignored.' }),
          },
          { error: (issue) => (issue.code === 'unrecognized_keys' ? 'unknown stream option' : 'must be an object') },
        )
        .nullish()
        .meta({ description: '`include_usage: true`: a last chunk, with no choices, carries `usage`.' }),
      // Generation parameters: kept with the request and forwarded to `openai`-provider upstreams.
      temperature: numberIn(0, 2),
      top_p: numberIn(0, 1),
      presence_penalty: numberIn(-2, 2),
      frequency_penalty: numberIn(-2, 2),
      max_tokens: tokens(),
      max_completion_tokens: tokens(),
      seed: z.int('must be an integer').nullish(),
      stop: z
        .union(
          [
            z.string(),
            // Counted once its items are read (zod's .max would count first): a list of non-strings is refused as such.
            z
              .array(z.string())
              .refine(
                (stop) => stop.length <= chatBounds.stopSequences,
                `must hold at most ${chatBounds.stopSequences} sequences`,
              )
              .meta({ maxItems: chatBounds.stopSequences }),
          ],
          'must be a string or a list of strings',
        )
        .nullish(),
      response_format: responseFormat.nullish().meta({
        description: '`json_schema` is refused on the `echo` provider (400).',
      }),
      user: unitsAtMost(
        z.string('must be a string'),
        chatBounds.userChars,
        `must be at most ${chatBounds.userChars} characters long`,
      ).nullish(),
      tools: functionTools.nullish().meta({ description: 'Names are unique. Refused on the `echo` provider (400).' }),
      parallel_tool_calls: optionalBoolean,
      tool_choice: toolChoice.nullish().meta({
        description:
          '`required` needs `tools`; a function named must be one of `tools`. Without tools, `none` and `auto` are ' +
          'not forwarded.',
      }),
      metadata: metadataField.meta({
        description:
          'Bounded and kept with the request as on `POST /v1/responses` (400 beyond the bounds); no chat completion ' +
          'object shows it (OpenAI shows it only through stored completions, which airs does not serve).',
      }),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown parameter ${shown(issue.keys[0])}; airs refuses what it would not honour`
          : 'the body must be a JSON object with "model" and "messages"',
    },
  )
  .superRefine(
    (body, payload) => {
      // Rules across fields, once the fields they read were read without a fault.
      if (payload.issues.some((issue) => issue.path?.[0] === 'tools' || issue.path?.[0] === 'tool_choice')) return;
      const fault = toolChoiceFault(body);
      if (fault !== undefined) payload.addIssue({ code: 'custom', ...fault });
    },
    { when: (payload) => isObject(payload.value) },
  )
  .meta({
    description:
      'An OpenAI chat completions body. The generation parameters are forwarded to `openai`-provider upstreams and ' +
      'kept with the request. Any other field is refused (400), naming it, unless the model passes it through (its ' +
      '`passThrough`): then it is sent to the upstream as given.',
  });

// ---- The answer ----

const completionId = z
  .string()
  .regex(/^chatcmpl-[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: 'The request’s id under OpenAI’s prefix: `chatcmpl-X` is the request `req_X` of `/v1/ai`.',
  });

const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });

/** A call of a function tool, as the answer shows it (the model's, as the upstream gave it). */
const answeredToolCall = z
  .looseObject({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z.looseObject({
      name: z.string().min(1),
      arguments: z.string().meta({ description: 'JSON text, as the model wrote it.' }),
    }),
  })
  .meta({ description: 'A call of a function tool.' });

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
            tool_calls: z.array(answeredToolCall).optional(),
          }),
          finish_reason: finishReason,
          logprobs: z.null(),
        }),
      )
      .length(1),
    usage: chatUsageSchema.nullable().optional().meta({ description: 'Absent when the model did not tell it.' }),
    service_tier: servedTierField,
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
