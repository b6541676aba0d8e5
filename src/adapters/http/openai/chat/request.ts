import type { z } from 'zod';
import type { SubmitInput } from '../../../../app/Requests.js';
import { lastUserText } from '../../../../app/storedInput.js';
import type { InvalidRequest } from '../../../../domain/errors.js';
import type { PassThroughOf } from '../../../../modelPassThrough.js';
import type { GenerationParams } from '../../../../ports/ModelProvider.js';
import { checkOrderOf, refusalOf } from '../bodyRefusal.js';
import { givenFieldsReader } from '../givenFields.js';
import { keptMetadataOf } from '../metadata.js';
import { withPassThrough } from '../passThrough.js';
import { chatMessageOf } from './messagesSchema.js';
import { functionToolOf, toolChoiceFault } from './toolsSchema.js';
import { chatCompletionCreateBodySchema, chatUnknownFieldsBefore } from './wireFormat.js';

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

const readFields = givenFieldsReader(shape, 'refuse');

/**
 * The body read with the schema's own fields, over the fields given only (givenFields.ts), and the rule across
 * fields; undefined at any fault, which the whole schema then reports as it orders faults.
 */
const readGiven = (body: unknown): ChatBody | undefined => {
  const read = readFields(body) as ChatBody | undefined;
  return read !== undefined && toolChoiceFault(read) === undefined ? read : undefined;
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
      serviceTier: data.service_tier ?? undefined,
    },
    stream,
    includeUsage: stream && data.stream_options?.include_usage === true,
  };
};

const parseBody = (body: unknown): ChatCreate | InvalidRequest => {
  const given = readGiven(body);
  if (given !== undefined) return createOf(body, given);
  const parsed = chatCompletionCreateBodySchema.safeParse(body);
  return parsed.success ? createOf(body, parsed.data) : refusalOf(parsed.error.issues, order);
};

/**
 * Reads a `POST /v1/chat/completions` body as OpenAI's SDKs, Vercel's AI SDK and LangChain send it (contract 13),
 * with the body's schema (chat/wireFormat.ts): `model`, `messages` (system, developer, user, assistant with tool
 * calls, tool), generation parameters and function tools (kept with the request and forwarded), `stream` and
 * `stream_options`, `metadata` (kept), and the fields the model passes through (`passThroughOf`: passThrough.ts).
 * What would change the answer and cannot be honoured is refused naming the field in `param`; so is any other
 * unknown field.
 */
export const parseChatCreate = (body: unknown, passThroughOf?: PassThroughOf): ChatCreate | InvalidRequest =>
  withPassThrough(body, passThroughOf, parseBody);
