import { cancelledWords } from '../../../app/cancelAfter.js';
import type { RequestView } from '../../../app/Requests.js';
import { failedMessage } from '../../../app/upstreamProblems.js';
import { tierOf } from '../../../domain/serviceTier.js';
import type { ToolCall } from '../../../ports/ModelProvider.js';
import { defaultSettings, type ResponseSettings } from './generationSettings.js';
import type { ReferencedItem } from './inputItems.js';
import { shownMetadataOf } from './metadata.js';

/** Response ids are the request's id under OpenAI's prefix: `req_X` is answered as `resp_X`, and back. */
export const responseIdOf = (reqId: string): string => (reqId.startsWith('req_') ? `resp_${reqId.slice(4)}` : reqId);

/** The request id a response id names (`resp_X` → `req_X`); a `req_` id from `/v1/ai` is taken as it is. */
export const requestIdOf = (responseId: string): string =>
  responseId.startsWith('resp_') ? `req_${responseId.slice(5)}` : responseId;

const suffixOf = (reqId: string) => (reqId.startsWith('req_') ? reqId.slice(4) : reqId);

/** The ids of a Response's output items: its message, and its function calls by their place among the calls. */
export const messageItemIdOf = (reqId: string): string => `msg_${suffixOf(reqId)}`;
export const functionCallItemIdOf = (reqId: string, index: number): string => `fc_${suffixOf(reqId)}_${index}`;

/** The request an output item id names, and which of its items (the inverse of the two above). */
export const itemPlaceOf = (id: string) => {
  if (id.startsWith('msg_')) return { reqId: `req_${id.slice(4)}`, call: undefined };
  const call = /^fc_(.+)_(\d{1,4})$/.exec(id);
  return call === null ? undefined : { reqId: `req_${call[1]}`, call: Number(call[2]) };
};

/**
 * The output item of a completed Response that `id` names (as its `output` has it), or undefined: `find` gives the
 * requests the caller may see.
 */
export const referencedItemOf = (
  id: string,
  find: (reqId: string) => RequestView | undefined,
): ReferencedItem | undefined => {
  const place = itemPlaceOf(id);
  const view = place === undefined ? undefined : find(place.reqId);
  if (place === undefined || view === undefined || view.status !== 'completed') return undefined;
  const item = outputOf(view).find((it) => it.id === id);
  if (item?.type === 'function_call')
    return { type: 'function_call', call: view.toolCalls?.[place.call ?? -1] as ToolCall };
  return item === undefined ? undefined : { type: 'message', text: view.response ?? '' };
};

export type ResponseObjectOptions = {
  /** How an unfinished request is shown: `queued` while it waits and `in_progress` while a worker has it, or `queued`. */
  readonly unfinishedAs?: 'queued' | 'by-state';
  /** The settings the create asked for; a call that does not have them (a retrieve) shows OpenAI's defaults. */
  readonly settings?: ResponseSettings;
};

/** The Response's status: `queued` while it waits, `in_progress` while a worker has it (unless asked otherwise). */
const statusOf = (view: RequestView, options: ResponseObjectOptions): string => {
  if (view.status !== 'queued') return view.status;
  if (options.unfinishedAs === 'queued') return 'queued';
  return view.state.status === 'processing' ? 'in_progress' : 'queued';
};

const seconds = (ms: number | undefined) => (ms === undefined ? null : Math.floor(ms / 1000));

/** An output text part. */
export const outputTextOf = (text: string) => ({ type: 'output_text', text, annotations: [] as never[] });

/** The assistant message item of a Response (its text, one `output_text` part). */
export const messageItemOf = (reqId: string, text: string, status: 'in_progress' | 'completed') => ({
  type: 'message',
  id: messageItemIdOf(reqId),
  status,
  role: 'assistant',
  content: status === 'completed' ? [outputTextOf(text)] : [],
});

/** A function call item of a Response; `call_id` is the model's id for the call, which its output must name. */
export const functionCallItemOf = (
  reqId: string,
  index: number,
  call: ToolCall,
  status: 'in_progress' | 'completed',
) => ({
  type: 'function_call',
  id: functionCallItemIdOf(reqId, index),
  call_id: call.id,
  name: call.function.name,
  arguments: status === 'completed' ? call.function.arguments : '',
  status,
});

/**
 * A completed request's output: its text as one assistant message (left out when the model only called tools), then
 * one `function_call` item per tool it calls. The stream (responseEvents.ts) writes the same items in the same order.
 */
export const outputOf = (view: RequestView) => {
  const { reqId } = view.state.context;
  const text = view.response ?? '';
  const calls = view.toolCalls ?? [];
  return [
    ...(text === '' && calls.length > 0 ? [] : [messageItemOf(reqId, text, 'completed')]),
    ...calls.map((call, i) => functionCallItemOf(reqId, i, call, 'completed')),
  ];
};

/** Tokens read and written, with the detail objects OpenAI's SDK types carry (airs knows no cached or reasoning tokens). */
const usageOf = (view: RequestView) => {
  const { inputTokens, outputTokens } = view.state.context;
  if (view.status !== 'completed' || inputTokens === undefined || outputTokens === undefined) return null;
  return {
    input_tokens: inputTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: inputTokens + outputTokens,
  };
};

/** Why a completed answer stopped short, as OpenAI says it: out of tokens, or filtered; or why it was cancelled, when
 * its deadline (`Cancel-After`) passed. */
const incompleteDetailsOf = (view: RequestView) => {
  if (view.status === 'cancelled' && view.state.context.cancelReason === 'deadline') return { reason: 'deadline' };
  if (view.status !== 'completed') return null;
  const reason = view.state.context.finishReason;
  if (reason === 'length') return { reason: 'max_output_tokens' };
  if (reason === 'content_filter') return { reason: 'content_filter' };
  return null;
};

/**
 * The error of a failed Response: OpenAI's `{code, message}`, with `type` and `param` as in its error objects (the
 * Vercel AI SDK refuses the whole Response as `Invalid JSON response` without them, instead of raising the failure).
 */
export const failureOf = (reqId: string, said: string | undefined) => ({
  code: 'server_error',
  message: failedMessage(responseIdOf(reqId), said, ' after its retries; submit it again'),
  type: 'server_error',
  param: null,
});

/** A deadline's cancel, as an error object (the code names the reason the log gives it). */
const deadlineError = (reqId: string) => ({
  code: 'deadline',
  message: cancelledWords(responseIdOf(reqId), 'deadline'),
  type: 'invalid_request_error',
  param: null,
});

/** The `error` of a final Response: its failure, or its deadline's cancel; otherwise none. */
const errorOf = (view: RequestView) => {
  const { context } = view.state;
  if (view.status === 'failed') return failureOf(context.reqId, context.failureSaid);
  if (view.status === 'cancelled' && context.cancelReason === 'deadline') return deadlineError(context.reqId);
  return null;
};

/**
 * A request as OpenAI's Response object (`object: "response"`), with the fields the SDKs read: a completed one
 * carries its output (text, function calls) and usage; a failed one its `error`. `snapshot` gives the Response as a
 * stream shows it before any output: the given status, no output, no usage.
 */
export const responseObjectOf = (
  view: RequestView,
  options: ResponseObjectOptions = {},
  snapshot?: 'queued' | 'in_progress',
) => {
  const { context } = view.state;
  const status = snapshot ?? statusOf(view, options);
  const final = snapshot === undefined;
  const completed = final && view.status === 'completed';
  const settings = options.settings ?? defaultSettings;
  return {
    id: responseIdOf(context.reqId),
    object: 'response',
    created_at: seconds(context.createdAt),
    status,
    background: settings.background,
    completed_at: completed ? seconds(context.completedAt) : null,
    model: context.servedBy ?? context.model,
    output: completed ? outputOf(view) : [],
    error: final ? errorOf(view) : null,
    incomplete_details: final ? incompleteDetailsOf(view) : null,
    instructions: null,
    max_output_tokens: settings.max_output_tokens,
    // Kept with the request: the create, a retrieve, a stream's events and a cancel all show it (metadata.ts).
    metadata: shownMetadataOf(context.metadata),
    parallel_tool_calls: settings.parallel_tool_calls,
    temperature: settings.temperature,
    text: settings.text,
    tool_choice: settings.tool_choice,
    tools: settings.tools,
    top_p: settings.top_p,
    user: settings.user,
    usage: final ? usageOf(view) : null,
    // The tier it is served at (contract 20), as OpenAI's answers say it.
    service_tier: tierOf(context),
  };
};

export type ResponseObject = ReturnType<typeof responseObjectOf>;
