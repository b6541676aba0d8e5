import type { SubmitInput } from '../../../../app/Requests.js';
import { lastUserText } from '../../../../app/storedInput.js';
import { InvalidRequest } from '../../../../domain/errors.js';
import type {
  ChatMessage,
  FunctionTool,
  GenerationParams,
  ResponseFormat,
  ToolCall,
  ToolChoice,
} from '../../../../ports/ModelProvider.js';
import { metadataOf } from '../metadata.js';

/** A `POST /v1/chat/completions` body understood: what to queue, and how the caller wants the answer. */
export type ChatCreate = {
  readonly input: SubmitInput;
  readonly stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  readonly includeUsage: boolean;
};

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

const invalid = (param: string, message: string) =>
  new InvalidRequest({ message: `${param}: ${message}`, details: { param } });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Absent: missing or null (OpenAI's clients send null for an unset field). */
const absent = (value: unknown): value is undefined | null => value === undefined || value === null;

const shown = (value: unknown) => (JSON.stringify(value) ?? String(value)).slice(0, 50);

/** A surrogate half alone is not text: storage would turn it into U+FFFD and the echo would differ. */
const brokenUnicode = /\p{Cs}/u;

/** A function's name as OpenAI takes it. */
const functionName = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Fields that would change the answer and that airs cannot honour: refused, never ignored (contract 13). `n`,
 * `logprobs`, `top_logprobs`, `modalities` and `logit_bias` are refused only when they ask for something.
 */
const unsupported: Readonly<Record<string, string>> = {
  audio: 'audio output is not supported; airs answers text',
  functions: 'functions (the deprecated form of tools) are not supported; send tools',
  function_call: 'function_call (the deprecated form of tool_choice) is not supported; send tool_choice',
  prediction: 'predicted outputs are not supported',
  reasoning_effort: 'reasoning_effort is not supported by airs',
  verbosity: 'verbosity is not supported by airs',
  web_search_options: 'web search is not supported',
};

/**
 * Fields accepted and not forwarded: none of them can change the answer's text (storage, billing, caching and
 * abuse-tracking hints of OpenAI's own service, and the shape of a stream). `metadata` is not among them: it is
 * kept with the request, bounded as on the Responses API (metadata.ts), though no chat completion object shows it.
 */
const acceptedUnused: Readonly<Record<string, 'boolean' | 'string' | 'object'>> = {
  store: 'boolean',
  service_tier: 'string',
  prompt_cache_key: 'string',
  prompt_cache_retention: 'string',
  safety_identifier: 'string',
};

/** Every field the parser reads; any other is refused (as OpenAI does), so nothing is silently dropped. */
const known = new Set([
  'model',
  'messages',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'max_tokens',
  'max_completion_tokens',
  'stop',
  'seed',
  'presence_penalty',
  'frequency_penalty',
  'response_format',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'user',
  'n',
  'logprobs',
  'top_logprobs',
  'modalities',
  'logit_bias',
  'metadata',
  ...Object.keys(unsupported),
  ...Object.keys(acceptedUnused),
]);

/** A message's content: a string, or a list of `text` parts (joined with newlines). */
const textOf = (content: unknown, param: string): string | InvalidRequest => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return invalid(param, 'must be a string or a list of text parts');
  const texts: string[] = [];
  for (const [i, part] of content.entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(part)) return invalid(at, 'must be an object {"type": "text", "text": ...}');
    if (part.type !== 'text')
      return invalid(
        `${at}.type`,
        `content part type ${shown(part.type)} is not supported; airs takes text parts only (no images, audio or files)`,
      );
    if (typeof part.text !== 'string') return invalid(`${at}.text`, 'must be a string');
    texts.push(part.text);
  }
  return texts.join('\n');
};

const shortString = (value: unknown, param: string, max: number): string | InvalidRequest => {
  if (typeof value !== 'string' || value === '') return invalid(param, 'must be a non-empty string');
  if (value.length > max) return invalid(param, `must be at most ${max} characters long`);
  return value;
};

const toolCallsOf = (value: unknown, param: string): ToolCall[] | InvalidRequest => {
  if (!Array.isArray(value)) return invalid(param, 'must be a list of tool calls');
  if (value.length > chatBounds.toolCallsPerMessage)
    return invalid(param, `must hold at most ${chatBounds.toolCallsPerMessage} tool calls`);
  const calls: ToolCall[] = [];
  for (const [i, call] of value.entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(call)) return invalid(at, 'must be an object {"id", "type": "function", "function"}');
    const id = shortString(call.id, `${at}.id`, chatBounds.idChars);
    if (id instanceof InvalidRequest) return id;
    if (call.type !== 'function')
      return invalid(`${at}.type`, `tool call type ${shown(call.type)} is not supported; only function`);
    if (!isObject(call.function)) return invalid(`${at}.function`, 'must be an object {"name", "arguments"}');
    if (typeof call.function.name !== 'string' || !functionName.test(call.function.name))
      return invalid(`${at}.function.name`, 'must be 1 to 64 letters, digits, _ or -');
    if (typeof call.function.arguments !== 'string')
      return invalid(`${at}.function.arguments`, 'must be a string (the arguments as JSON text)');
    calls.push({ id, type: 'function', function: { name: call.function.name, arguments: call.function.arguments } });
  }
  return calls;
};

const messageOf = (item: unknown, at: string): ChatMessage | InvalidRequest => {
  if (!isObject(item)) return invalid(at, 'must be a message {"role": ..., "content": ...}');
  const role = item.role;
  // A tool message's name is its function's (LangChain sends it): the call it answers names that function already.
  if (role === 'tool' && !absent(item.name)) {
    if (typeof item.name !== 'string' || !functionName.test(item.name))
      return invalid(`${at}.name`, 'must be the function’s name: 1 to 64 letters, digits, _ or -');
  } else if (!absent(item.name) && item.name !== '')
    return invalid(`${at}.name`, 'participant names are not supported; put the name in the content');
  if (role === 'system' || role === 'developer' || role === 'user') {
    const content = textOf(item.content, `${at}.content`);
    return content instanceof InvalidRequest ? content : { role, content };
  }
  if (role === 'assistant') {
    for (const field of ['audio', 'function_call'] as const)
      if (!absent(item[field])) return invalid(`${at}.${field}`, `is not supported`);
    if (!absent(item.refusal) && typeof item.refusal !== 'string')
      return invalid(`${at}.refusal`, 'must be a string or null');
    const calls = absent(item.tool_calls) ? [] : toolCallsOf(item.tool_calls, `${at}.tool_calls`);
    if (calls instanceof InvalidRequest) return calls;
    if (absent(item.content)) {
      if (calls.length === 0) return invalid(`${at}.content`, 'is required unless the message has tool_calls');
      return { role, content: null, tool_calls: calls };
    }
    const content = textOf(item.content, `${at}.content`);
    if (content instanceof InvalidRequest) return content;
    return calls.length === 0 ? { role, content } : { role, content, tool_calls: calls };
  }
  if (role === 'tool') {
    const id = shortString(item.tool_call_id, `${at}.tool_call_id`, chatBounds.idChars);
    if (id instanceof InvalidRequest) return id;
    const content = textOf(item.content, `${at}.content`);
    return content instanceof InvalidRequest ? content : { role, tool_call_id: id, content };
  }
  if (role === 'function') return invalid(`${at}.role`, 'function messages are not supported; send tool messages');
  return invalid(`${at}.role`, 'must be one of system, developer, user, assistant, tool');
};

const messagesOf = (value: unknown): ChatMessage[] | InvalidRequest => {
  if (absent(value)) return invalid('messages', 'is required');
  if (!Array.isArray(value)) return invalid('messages', 'must be a list of messages');
  if (value.length === 0) return invalid('messages', 'must not be an empty list');
  const messages: ChatMessage[] = [];
  for (const [i, item] of value.entries()) {
    const message = messageOf(item, `messages[${i}]`);
    if (message instanceof InvalidRequest) return message;
    messages.push(message);
  }
  const texts = messages.map((m) => m.content ?? '');
  if (texts.every((text) => text.trim() === '') && !messages.some((m) => m.role === 'assistant' && m.tool_calls))
    return invalid('messages', 'must not be empty (every message holds only white space)');
  if (texts.some((text) => brokenUnicode.test(text)))
    return invalid('messages', 'must be valid Unicode text; it contains an unpaired surrogate');
  return messages;
};

const numberIn = (value: unknown, param: string, min: number, max: number): number | InvalidRequest =>
  typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max
    ? value
    : invalid(param, `must be a number from ${min} to ${max}`);

const positiveInt = (value: unknown, param: string): number | InvalidRequest =>
  Number.isInteger(value) && (value as number) >= 1 && (value as number) <= chatBounds.maxTokens
    ? (value as number)
    : invalid(param, `must be an integer from 1 to ${chatBounds.maxTokens}`);

const stopOf = (value: unknown): string | string[] | InvalidRequest => {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string'))
    return invalid('stop', 'must be a string or a list of strings');
  if (value.length > chatBounds.stopSequences)
    return invalid('stop', `must hold at most ${chatBounds.stopSequences} sequences`);
  return value as string[];
};

const schemaObject = (value: unknown, param: string): Record<string, unknown> | undefined | InvalidRequest => {
  if (absent(value)) return undefined;
  return isObject(value) ? value : invalid(param, 'must be a JSON schema object');
};

const optionalBoolean = (value: unknown, param: string): boolean | undefined | InvalidRequest => {
  if (absent(value)) return undefined;
  return typeof value === 'boolean' ? value : invalid(param, 'must be true or false');
};

const optionalString = (value: unknown, param: string): string | undefined | InvalidRequest => {
  if (absent(value)) return undefined;
  return typeof value === 'string' ? value : invalid(param, 'must be a string');
};

const responseFormatOf = (value: unknown): ResponseFormat | InvalidRequest => {
  if (!isObject(value)) return invalid('response_format', 'must be an object with a type');
  if (value.type === 'text' || value.type === 'json_object') return { type: value.type };
  if (value.type !== 'json_schema')
    return invalid('response_format.type', 'must be one of text, json_object, json_schema');
  const spec = value.json_schema;
  if (!isObject(spec)) return invalid('response_format.json_schema', 'must be an object {"name", "schema"}');
  if (typeof spec.name !== 'string' || !functionName.test(spec.name))
    return invalid('response_format.json_schema.name', 'must be 1 to 64 letters, digits, _ or -');
  const description = optionalString(spec.description, 'response_format.json_schema.description');
  if (description instanceof InvalidRequest) return description;
  const schema = schemaObject(spec.schema, 'response_format.json_schema.schema');
  if (schema instanceof InvalidRequest) return schema;
  const strict = optionalBoolean(spec.strict, 'response_format.json_schema.strict');
  if (strict instanceof InvalidRequest) return strict;
  return {
    type: 'json_schema',
    json_schema: {
      name: spec.name,
      ...(description === undefined ? {} : { description }),
      ...(schema === undefined ? {} : { schema }),
      ...(strict === undefined ? {} : { strict }),
    },
  };
};

const toolsOf = (value: unknown): FunctionTool[] | InvalidRequest => {
  if (!Array.isArray(value)) return invalid('tools', 'must be a list of function tools');
  if (value.length > chatBounds.tools) return invalid('tools', `must hold at most ${chatBounds.tools} tools`);
  const tools: FunctionTool[] = [];
  for (const [i, tool] of value.entries()) {
    const at = `tools[${i}]`;
    if (!isObject(tool)) return invalid(at, 'must be an object {"type": "function", "function": ...}');
    if (tool.type !== 'function')
      return invalid(`${at}.type`, `tool type ${shown(tool.type)} is not supported; airs takes function tools only`);
    const fn = tool.function;
    if (!isObject(fn)) return invalid(`${at}.function`, 'must be an object {"name", "parameters"}');
    if (typeof fn.name !== 'string' || !functionName.test(fn.name))
      return invalid(`${at}.function.name`, 'must be 1 to 64 letters, digits, _ or -');
    if (tools.some((t) => t.function.name === fn.name))
      return invalid(`${at}.function.name`, `another tool is already named ${fn.name}`);
    const description = optionalString(fn.description, `${at}.function.description`);
    if (description instanceof InvalidRequest) return description;
    const parameters = schemaObject(fn.parameters, `${at}.function.parameters`);
    if (parameters instanceof InvalidRequest) return parameters;
    const strict = optionalBoolean(fn.strict, `${at}.function.strict`);
    if (strict instanceof InvalidRequest) return strict;
    tools.push({
      type: 'function',
      function: {
        name: fn.name,
        ...(description === undefined ? {} : { description }),
        ...(parameters === undefined ? {} : { parameters }),
        ...(strict === undefined ? {} : { strict }),
      },
    });
  }
  return tools;
};

const toolChoiceOf = (value: unknown, tools: readonly FunctionTool[]): ToolChoice | InvalidRequest => {
  if (value === 'none' || value === 'auto' || value === 'required') return value;
  if (!isObject(value) || value.type !== 'function' || !isObject(value.function))
    return invalid('tool_choice', 'must be none, auto, required or {"type": "function", "function": {"name"}}');
  const name = value.function.name;
  if (typeof name !== 'string' || !tools.some((tool) => tool.function.name === name))
    return invalid('tool_choice.function.name', 'must name one of the tools');
  return { type: 'function', function: { name } };
};

/** The fields that ask for what airs cannot give: refused with the field named. */
const refusal = (body: Record<string, unknown>): InvalidRequest | undefined => {
  for (const [field, message] of Object.entries(unsupported)) if (!absent(body[field])) return invalid(field, message);
  if (!absent(body.n) && body.n !== 1) return invalid('n', 'only 1 choice is supported');
  if (!absent(body.logprobs) && body.logprobs !== false)
    return invalid('logprobs', 'log probabilities are not supported');
  if (!absent(body.top_logprobs)) return invalid('top_logprobs', 'log probabilities are not supported');
  if (
    !absent(body.modalities) &&
    !(Array.isArray(body.modalities) && body.modalities.every((modality) => modality === 'text'))
  )
    return invalid('modalities', 'only ["text"] is supported');
  if (!absent(body.logit_bias) && !(isObject(body.logit_bias) && Object.keys(body.logit_bias).length === 0))
    return invalid('logit_bias', 'logit_bias is not supported');
  for (const [field, type] of Object.entries(acceptedUnused)) {
    const value = body[field];
    if (absent(value)) continue;
    if (type === 'object' ? !isObject(value) : typeof value !== type)
      return invalid(field, `must be ${type === 'object' ? 'an object' : `a ${type}`}`);
  }
  for (const field of Object.keys(body))
    if (!known.has(field))
      return invalid(field.slice(0, 100), `unknown parameter ${shown(field)}; airs refuses what it would not honour`);
  return undefined;
};

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** Generation parameters and tools as given, each checked; unset (absent or null) ones are left out. */
const paramsOf = (body: Record<string, unknown>): GenerationParams | InvalidRequest => {
  const params: Mutable<GenerationParams> = {};
  const ranges = [
    ['temperature', 0, 2],
    ['top_p', 0, 1],
    ['presence_penalty', -2, 2],
    ['frequency_penalty', -2, 2],
  ] as const;
  for (const [field, min, max] of ranges) {
    if (absent(body[field])) continue;
    const value = numberIn(body[field], field, min, max);
    if (value instanceof InvalidRequest) return value;
    params[field] = value;
  }
  for (const field of ['max_tokens', 'max_completion_tokens'] as const) {
    if (absent(body[field])) continue;
    const value = positiveInt(body[field], field);
    if (value instanceof InvalidRequest) return value;
    params[field] = value;
  }
  if (!absent(body.seed)) {
    if (!Number.isSafeInteger(body.seed)) return invalid('seed', 'must be an integer');
    params.seed = body.seed as number;
  }
  if (!absent(body.stop)) {
    const stop = stopOf(body.stop);
    if (stop instanceof InvalidRequest) return stop;
    params.stop = stop;
  }
  if (!absent(body.response_format)) {
    const format = responseFormatOf(body.response_format);
    if (format instanceof InvalidRequest) return format;
    params.response_format = format;
  }
  if (!absent(body.user)) {
    if (typeof body.user !== 'string') return invalid('user', 'must be a string');
    if (body.user.length > chatBounds.userChars)
      return invalid('user', `must be at most ${chatBounds.userChars} characters long`);
    params.user = body.user;
  }
  const tools = absent(body.tools) ? [] : toolsOf(body.tools);
  if (tools instanceof InvalidRequest) return tools;
  const parallel = optionalBoolean(body.parallel_tool_calls, 'parallel_tool_calls');
  if (parallel instanceof InvalidRequest) return parallel;
  const choice = absent(body.tool_choice) ? undefined : toolChoiceOf(body.tool_choice, tools);
  if (choice instanceof InvalidRequest) return choice;
  if (tools.length > 0) {
    params.tools = tools;
    if (choice !== undefined) params.tool_choice = choice;
    if (parallel !== undefined) params.parallel_tool_calls = parallel;
  } else if (choice === 'required') return invalid('tool_choice', 'required needs tools');
  // Without tools, tool_choice none or auto and parallel_tool_calls cannot change the answer: not forwarded (an
  // upstream may refuse them without tools).
  return params;
};

/**
 * Reads a `POST /v1/chat/completions` body as OpenAI's SDKs, Vercel's AI SDK and LangChain send it (contract 13):
 * `model`, `messages` (system, developer, user, assistant with tool calls, tool), generation parameters and function
 * tools (kept with the request and forwarded), `stream` and `stream_options`. What would change the answer and cannot
 * be honoured is refused naming the field in `param`; so is any unknown field.
 */
export const parseChatCreate = (body: unknown): ChatCreate | InvalidRequest => {
  if (!isObject(body))
    return new InvalidRequest({ message: 'the body must be a JSON object with "model" and "messages"' });
  if (body.model === undefined || body.model === null) return invalid('model', 'is required');
  if (typeof body.model !== 'string') return invalid('model', 'must be a string');
  const messages = messagesOf(body.messages);
  if (messages instanceof InvalidRequest) return messages;
  const refused = refusal(body);
  if (refused !== undefined) return refused;
  const stream = optionalBoolean(body.stream, 'stream');
  if (stream instanceof InvalidRequest) return stream;
  let includeUsage = false;
  if (!absent(body.stream_options)) {
    const options = body.stream_options;
    if (!isObject(options)) return invalid('stream_options', 'must be an object');
    for (const field of Object.keys(options))
      if (field !== 'include_usage' && field !== 'include_obfuscation')
        return invalid(`stream_options.${field.slice(0, 100)}`, 'unknown stream option');
    const usage = optionalBoolean(options.include_usage, 'stream_options.include_usage');
    if (usage instanceof InvalidRequest) return usage;
    const obfuscation = optionalBoolean(options.include_obfuscation, 'stream_options.include_obfuscation');
    if (obfuscation instanceof InvalidRequest) return obfuscation;
    includeUsage = usage === true;
  }
  const params = paramsOf(body);
  if (params instanceof InvalidRequest) return params;
  const metadata = metadataOf(body.metadata);
  if (metadata instanceof InvalidRequest) return metadata;
  return {
    input: {
      model: body.model,
      prompt: lastUserText(messages),
      messages,
      params: Object.keys(params).length === 0 ? undefined : params,
      metadata,
    },
    stream: stream === true,
    includeUsage: stream === true && includeUsage,
  };
};
