import { z } from 'zod';
import {
  chatCompletionCreateBodySchema,
  chatMessageOf,
  chatUnknownFieldsBefore,
  functionToolOf,
  toolChoiceFault,
} from '../../../../app/chatWireFormat.js';
import type { SubmitInput } from '../../../../app/Requests.js';
import { lastUserText } from '../../../../app/storedInput.js';
import type { InvalidRequest } from '../../../../domain/errors.js';
import type { GenerationParams } from '../../../../ports/ModelProvider.js';
import { checkOrderOf, refusalOf } from '../bodyRefusal.js';
import { keptMetadataOf } from '../metadata.js';

/** A `POST /v1/chat/completions` body understood: what to queue, and how the caller wants the answer. */
export type ChatCreate = {
  readonly input: SubmitInput;
  readonly stream: boolean;
  /** `stream_options.include_usage`: a last chunk with the usage and no choices. */
  readonly includeUsage: boolean;
};

type ChatBody = z.output<typeof chatCompletionCreateBodySchema>;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const { shape } = chatCompletionCreateBodySchema;
const order = checkOrderOf(shape, chatUnknownFieldsBefore);

/**
 * A field as readGiven reads it: `null` taken as the field's `.nullable()` takes it, and the rest read by the schema
 * inside (each wrapper a body's field crosses costs a call in zod).
 */
type Field = { readonly takesNull: boolean; readonly schema: z.ZodType };

const fieldOf = (schema: z.ZodType): Field => {
  let inner = schema;
  if (inner instanceof z.ZodOptional) inner = inner.unwrap() as z.ZodType;
  if (inner instanceof z.ZodNullable) return { takesNull: true, schema: inner.unwrap() as z.ZodType };
  return { takesNull: false, schema };
};

const fields: ReadonlyMap<string, Field> = new Map(
  Object.entries(shape).map(([key, schema]) => [key, fieldOf(schema as z.ZodType)]),
);
/** The fields a body must give: those whose schema refuses absence. */
const requiredFields = Object.entries(shape)
  .filter(([, schema]) => !(schema as z.ZodType).safeParse(undefined).success)
  .map(([key]) => key);

/**
 * The body read with the schema's own fields, over the fields given only: a body gives a few of the schema's forty,
 * and zod's object reads every one. It accepts what the whole schema accepts and reads it alike (the same fields,
 * none unknown, the required ones given, the rule across fields); undefined at any fault, which the whole schema
 * then reports as it orders faults.
 */
const readGiven = (body: unknown): ChatBody | undefined => {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const given = body as Record<string, unknown>;
  const read: Record<string, unknown> = {};
  for (const key of Object.keys(given)) {
    const field = fields.get(key);
    if (field === undefined) return undefined;
    const value = given[key];
    if (value === null && field.takesNull) read[key] = null;
    else {
      const result = field.schema.safeParse(value);
      if (!result.success) return undefined;
      read[key] = result.data;
    }
  }
  for (const key of requiredFields) if (!(key in given)) return undefined;
  return toolChoiceFault(read as ChatBody) === undefined ? (read as ChatBody) : undefined;
};

const set = <T>(value: T | null | undefined): value is T => value !== undefined && value !== null;

/**
 * The generation parameters given, in the order airs has always kept them (the stored text shows it); unset (absent
 * or null) ones are left out. Each read by name: a read by a computed name is several times slower.
 */
const paramsOf = (body: ChatBody): GenerationParams | undefined => {
  const { temperature, top_p, presence_penalty, frequency_penalty, max_tokens, max_completion_tokens, seed } = body;
  const { stop, response_format, user, tools, tool_choice, parallel_tool_calls } = body;
  const params: Mutable<GenerationParams> = {};
  if (set(temperature)) params.temperature = temperature;
  if (set(top_p)) params.top_p = top_p;
  if (set(presence_penalty)) params.presence_penalty = presence_penalty;
  if (set(frequency_penalty)) params.frequency_penalty = frequency_penalty;
  if (set(max_tokens)) params.max_tokens = max_tokens;
  if (set(max_completion_tokens)) params.max_completion_tokens = max_completion_tokens;
  if (set(seed)) params.seed = seed;
  if (set(stop)) params.stop = stop;
  if (set(response_format)) params.response_format = response_format;
  if (set(user)) params.user = user;
  // Without tools, tool_choice none or auto and parallel_tool_calls cannot change the answer: not forwarded (an
  // upstream may refuse them without tools).
  if (set(tools) && tools.length > 0) {
    params.tools = tools.map(functionToolOf);
    if (set(tool_choice)) params.tool_choice = tool_choice;
    if (set(parallel_tool_calls)) params.parallel_tool_calls = parallel_tool_calls;
  }
  return Object.keys(params).length === 0 ? undefined : params;
};

const createOf = (body: unknown, data: ChatBody): ChatCreate => {
  const stream = data.stream === true;
  const messages = data.messages.map(chatMessageOf);
  return {
    input: {
      model: data.model,
      prompt: lastUserText(messages),
      messages,
      params: paramsOf(data),
      // As given: the schema's copy leaves out a `__proto__` key.
      metadata: keptMetadataOf((body as { metadata?: unknown }).metadata),
    },
    stream,
    includeUsage: stream && data.stream_options?.include_usage === true,
  };
};

/**
 * Reads a `POST /v1/chat/completions` body as OpenAI's SDKs, Vercel's AI SDK and LangChain send it (contract 13),
 * with the body's schema (app/chatWireFormat.ts): `model`, `messages` (system, developer, user, assistant with tool
 * calls, tool), generation parameters and function tools (kept with the request and forwarded), `stream` and
 * `stream_options`, `metadata` (kept). What would change the answer and cannot be honoured is refused naming the
 * field in `param`; so is any unknown field.
 */
export const parseChatCreate = (body: unknown): ChatCreate | InvalidRequest => {
  const given = readGiven(body);
  if (given !== undefined) return createOf(body, given);
  const parsed = chatCompletionCreateBodySchema.safeParse(body);
  return parsed.success ? createOf(body, parsed.data) : refusalOf(parsed.error.issues, order);
};
