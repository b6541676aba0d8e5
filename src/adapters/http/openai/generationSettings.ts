import { InvalidRequest } from '../../../domain/errors.js';
import type { FunctionTool, GenerationParams, ResponseFormat, ToolChoice } from '../../../ports/ModelProvider.js';

/**
 * What a `POST /v1/responses` body asks of the model beyond its input (tools, output format, sampling), read into the
 * port's `GenerationParams` (chat completions' names, which every upstream speaks), and the settings the Response
 * echoes back as OpenAI does.
 */

/**
 * The request's settings as the Response echoes them (OpenAI's field names). Cheap to hold while a call waits:
 * scalars and names only. A function's `parameters` and a JSON schema's `schema` are kept with the request (and sent
 * to the model), not echoed: echoing them would keep up to a whole body in memory for every waiting or streaming call.
 */
export type ResponseSettings = {
  /** Null where not known (a retrieve). */
  readonly background: boolean | null;
  readonly temperature: number | null;
  readonly top_p: number | null;
  readonly max_output_tokens: number | null;
  readonly parallel_tool_calls: boolean;
  readonly tool_choice: 'none' | 'auto' | 'required' | { readonly type: 'function'; readonly name: string };
  readonly tools: readonly {
    readonly type: 'function';
    readonly name: string;
    readonly parameters: null;
    readonly strict: boolean | null;
  }[];
  readonly text: {
    readonly format:
      | { readonly type: 'text' }
      | { readonly type: 'json_object' }
      | { readonly type: 'json_schema'; readonly name: string; readonly strict: boolean | null };
  };
  readonly user: string | null;
};

/**
 * What a Response shows when the call that made it is not the one answering (a retrieve): OpenAI's defaults, and
 * `background` unknown.
 */
export const defaultSettings: ResponseSettings = {
  background: null,
  temperature: null,
  top_p: null,
  max_output_tokens: null,
  parallel_tool_calls: true,
  tool_choice: 'auto',
  tools: [],
  text: { format: { type: 'text' } },
  user: null,
};

type Body = Readonly<Record<string, unknown>>;

export const invalid = (param: string, message: string) =>
  new InvalidRequest({ message: `${param}: ${message}`, details: { param } });

export const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Absent and `null` mean the same: OpenAI's SDKs send `null` for a setting left unset. */
const given = (value: unknown) => value !== undefined && value !== null;

const describe = (value: unknown) => JSON.stringify(value)?.slice(0, 50) ?? String(value);

const numberIn = (body: Body, param: string, min: number, max: number): number | undefined | InvalidRequest => {
  const value = body[param];
  if (!given(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    return invalid(param, `must be a number from ${min} to ${max}`);
  return value;
};

/** A function's name, as OpenAI limits it (upstreams refuse longer ones, after the request was queued). */
const functionName = (value: unknown, param: string): string | InvalidRequest => {
  if (typeof value !== 'string' || value === '') return invalid(param, 'must be a non-empty string');
  if (value.length > 64 || /[\p{Cc}\s]/u.test(value))
    return invalid(param, 'must be at most 64 characters, without spaces or control characters');
  return value;
};

const optionalString = (value: unknown, param: string): string | undefined | InvalidRequest => {
  if (!given(value)) return undefined;
  return typeof value === 'string' ? value : invalid(param, 'must be a string');
};

const optionalBoolean = (value: unknown, param: string): boolean | undefined | InvalidRequest => {
  if (!given(value)) return undefined;
  return typeof value === 'boolean' ? value : invalid(param, 'must be true or false');
};

const optionalSchema = (value: unknown, param: string): Record<string, unknown> | undefined | InvalidRequest => {
  if (!given(value)) return undefined;
  return isObject(value) ? value : invalid(param, 'must be a JSON Schema object');
};

/** `tools`: function tools only; OpenAI's hosted tools (web search, files, ...) cannot run here. */
const toolsOf = (value: unknown): FunctionTool[] | InvalidRequest => {
  if (!given(value)) return [];
  if (!Array.isArray(value)) return invalid('tools', 'must be a list of function tools');
  const tools: FunctionTool[] = [];
  const names = new Set<string>();
  for (const [i, tool] of value.entries()) {
    const at = `tools[${i}]`;
    if (!isObject(tool)) return invalid(at, 'must be an object {"type": "function", "name": ..., "parameters": ...}');
    if (tool.type !== 'function')
      return invalid(
        `${at}.type`,
        `tool type ${describe(tool.type)} is not supported; airs runs function tools only ("type": "function")`,
      );
    const name = functionName(tool.name, `${at}.name`);
    if (name instanceof InvalidRequest) return name;
    if (names.has(name)) return invalid(`${at}.name`, `the function name "${name}" is given twice`);
    names.add(name);
    const description = optionalString(tool.description, `${at}.description`);
    if (description instanceof InvalidRequest) return description;
    const parameters = optionalSchema(tool.parameters, `${at}.parameters`);
    if (parameters instanceof InvalidRequest) return parameters;
    const strict = optionalBoolean(tool.strict, `${at}.strict`);
    if (strict instanceof InvalidRequest) return strict;
    tools.push({
      type: 'function',
      function: {
        name,
        ...(description === undefined ? {} : { description }),
        ...(parameters === undefined ? {} : { parameters }),
        ...(strict === undefined ? {} : { strict }),
      },
    });
  }
  return tools;
};

/** `tool_choice`: `none`, `auto`, `required`, or one function by name (one of `tools`). */
const toolChoiceOf = (value: unknown, tools: readonly FunctionTool[]): ToolChoice | undefined | InvalidRequest => {
  if (!given(value)) return undefined;
  if (value === 'none' || value === 'auto') return value;
  if (value === 'required') return tools.length > 0 ? value : invalid('tool_choice', '"required" needs tools');
  if (!isObject(value) || value.type !== 'function')
    return invalid(
      'tool_choice',
      'must be "none", "auto", "required" or {"type": "function", "name": ...}; other choices are not supported',
    );
  if (typeof value.name !== 'string' || !tools.some((tool) => tool.function.name === value.name))
    return invalid('tool_choice.name', 'must name one of the functions in tools');
  return { type: 'function', function: { name: value.name } };
};

/** `text.format`: plain text, any JSON object, or JSON following a schema (sent upstream as `response_format`). */
const formatOf = (text: unknown): ResponseFormat | undefined | InvalidRequest => {
  if (!given(text)) return undefined;
  if (!isObject(text)) return invalid('text', 'must be an object {"format": ...}');
  if (given(text.verbosity))
    return invalid('text.verbosity', 'is not supported; leave it out (the model answers at its own length)');
  const format = text.format;
  if (!given(format)) return undefined;
  if (!isObject(format)) return invalid('text.format', 'must be an object {"type": ...}');
  if (format.type === 'text' || format.type === 'json_object') return { type: format.type };
  if (format.type !== 'json_schema')
    return invalid('text.format.type', 'must be "text", "json_object" or "json_schema"');
  const name = functionName(format.name, 'text.format.name');
  if (name instanceof InvalidRequest) return name;
  if (!isObject(format.schema)) return invalid('text.format.schema', 'must be a JSON Schema object');
  const description = optionalString(format.description, 'text.format.description');
  if (description instanceof InvalidRequest) return description;
  const strict = optionalBoolean(format.strict, 'text.format.strict');
  if (strict instanceof InvalidRequest) return strict;
  return {
    type: 'json_schema',
    json_schema: {
      name,
      ...(description === undefined ? {} : { description }),
      schema: format.schema,
      ...(strict === undefined ? {} : { strict }),
    },
  };
};

/** OpenAI fields that would change the answer and that airs cannot honour: refused, never ignored. */
const refusals = (body: Body): InvalidRequest | undefined => {
  if (given(body.top_logprobs) && body.top_logprobs !== 0)
    return invalid('top_logprobs', 'log probabilities are not supported');
  if (Array.isArray(body.include) && body.include.includes('message.output_text.logprobs'))
    return invalid('include', 'log probabilities (message.output_text.logprobs) are not supported');
  if (given(body.max_tool_calls))
    return invalid('max_tool_calls', 'is not supported; the model answers with one round of tool calls at most');
  return undefined;
};

/** The generation parameters (chat completions' names) and the settings to echo, or the field at fault. */
export const generationSettingsOf = (
  body: Body,
  background: boolean,
): { readonly params: GenerationParams; readonly settings: ResponseSettings } | InvalidRequest => {
  const refused = refusals(body);
  if (refused !== undefined) return refused;
  const temperature = numberIn(body, 'temperature', 0, 2);
  if (temperature instanceof InvalidRequest) return temperature;
  const topP = numberIn(body, 'top_p', 0, 1);
  if (topP instanceof InvalidRequest) return topP;
  const maxOutput = body.max_output_tokens;
  if (given(maxOutput) && !(Number.isSafeInteger(maxOutput) && (maxOutput as number) >= 1))
    return invalid('max_output_tokens', 'must be a whole number of at least 1');
  const user = optionalString(body.user, 'user');
  if (user instanceof InvalidRequest) return user;
  const parallel = optionalBoolean(body.parallel_tool_calls, 'parallel_tool_calls');
  if (parallel instanceof InvalidRequest) return parallel;
  const tools = toolsOf(body.tools);
  if (tools instanceof InvalidRequest) return tools;
  const toolChoice = toolChoiceOf(body.tool_choice, tools);
  if (toolChoice instanceof InvalidRequest) return toolChoice;
  const format = formatOf(body.text);
  if (format instanceof InvalidRequest) return format;

  const params: GenerationParams = {
    ...(temperature === undefined ? {} : { temperature }),
    ...(topP === undefined ? {} : { top_p: topP }),
    // `max_output_tokens` counts every token the model writes, reasoning included: chat completions'
    // `max_completion_tokens` (its `max_tokens` is deprecated, and refused by OpenAI's reasoning models).
    ...(given(maxOutput) ? { max_completion_tokens: maxOutput as number } : {}),
    // Plain text is what every model writes unasked: nothing to send.
    ...(format === undefined || format.type === 'text' ? {} : { response_format: format }),
    ...(tools.length === 0 ? {} : { tools }),
    ...(toolChoice === undefined ? {} : { tool_choice: toolChoice }),
    ...(parallel === undefined ? {} : { parallel_tool_calls: parallel }),
    ...(user === undefined ? {} : { user }),
  };
  const settings: ResponseSettings = {
    background,
    temperature: temperature ?? null,
    top_p: topP ?? null,
    max_output_tokens: given(maxOutput) ? (maxOutput as number) : null,
    parallel_tool_calls: parallel ?? true,
    tool_choice:
      toolChoice === undefined || typeof toolChoice === 'string'
        ? (toolChoice ?? 'auto')
        : { type: 'function', name: toolChoice.function.name },
    tools: tools.map(({ function: f }) => ({
      type: 'function',
      name: f.name,
      parameters: null,
      strict: f.strict ?? null,
    })),
    text: {
      format:
        format === undefined || format.type !== 'json_schema'
          ? { type: format?.type ?? 'text' }
          : { type: 'json_schema', name: format.json_schema.name, strict: format.json_schema.strict ?? null },
    },
    user: user ?? null,
  };
  return { params, settings };
};
