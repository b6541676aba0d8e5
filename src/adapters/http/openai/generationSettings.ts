import { InvalidRequest } from '../../../domain/errors.js';
import type { FunctionTool, GenerationParams, ResponseFormat, ToolChoice } from '../../../ports/ModelProvider.js';
import type { ResponsesCreateBody } from './wireFormat.js';

/**
 * What a `POST /v1/responses` body asks of the model beyond its input (tools, output format, sampling), as its schema
 * read it (openai/wireFormat.ts), put into the port's `GenerationParams` (chat completions' names, which every
 * upstream speaks), and the settings the Response echoes back as OpenAI does.
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

export const invalid = (param: string, message: string) =>
  new InvalidRequest({ message: `${param}: ${message}`, details: { param } });

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const set = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/** `text.format` as chat completions' `response_format`; undefined for none or plain text. */
const formatOf = (text: ResponsesCreateBody['text']): ResponseFormat | undefined => {
  const format = text?.format;
  if (!set(format)) return undefined;
  if (format.type !== 'json_schema') return { type: format.type };
  const { name, description, schema, strict } = format;
  return {
    type: 'json_schema',
    json_schema: {
      name,
      ...(set(description) ? { description } : {}),
      schema: schema as Record<string, unknown>,
      ...(set(strict) ? { strict } : {}),
    },
  };
};

/**
 * The generation parameters (chat completions' names) of a body the schema read (openai/wireFormat.ts), and the
 * settings to echo.
 */
export const generationSettingsOf = (
  body: ResponsesCreateBody,
  background: boolean,
): { readonly params: GenerationParams; readonly settings: ResponseSettings } => {
  const { temperature, top_p, max_output_tokens, user, parallel_tool_calls } = body;
  const tools: FunctionTool[] = (body.tools ?? []).map(({ name, description, parameters, strict }) => ({
    type: 'function',
    function: {
      name,
      ...(set(description) ? { description } : {}),
      ...(set(parameters) ? { parameters: parameters as Record<string, unknown> } : {}),
      ...(set(strict) ? { strict } : {}),
    },
  }));
  const choice = body.tool_choice;
  const toolChoice: ToolChoice | undefined = !set(choice)
    ? undefined
    : typeof choice === 'string'
      ? choice
      : { type: 'function', function: { name: choice.name } };
  const format = formatOf(body.text);
  // In the order airs has always kept them (the stored text shows it).
  const params: Mutable<GenerationParams> = {};
  if (set(temperature)) params.temperature = temperature;
  if (set(top_p)) params.top_p = top_p;
  // `max_output_tokens` counts every token the model writes, reasoning included: chat completions'
  // `max_completion_tokens` (its `max_tokens` is deprecated, and refused by OpenAI's reasoning models).
  if (set(max_output_tokens)) params.max_completion_tokens = max_output_tokens;
  // Plain text is what every model writes unasked: nothing to send.
  if (format !== undefined && format.type !== 'text') params.response_format = format;
  if (tools.length > 0) params.tools = tools;
  if (toolChoice !== undefined) params.tool_choice = toolChoice;
  if (set(parallel_tool_calls)) params.parallel_tool_calls = parallel_tool_calls;
  if (set(user)) params.user = user;
  const settings: ResponseSettings = {
    background,
    temperature: temperature ?? null,
    top_p: top_p ?? null,
    max_output_tokens: max_output_tokens ?? null,
    parallel_tool_calls: parallel_tool_calls ?? true,
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
