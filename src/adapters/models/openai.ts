import OpenAI from 'openai';
import { answerBytes, answerCounter, answerTooLarge } from '../../app/answerBound.js';
import { traceparentFor } from '../../app/traceContext.js';
import { isPermanent } from '../../app/upstreamProblems.js';
import type {
  ChatMessage,
  FinishReason,
  Generation,
  ModelProvider,
  ToolCall,
  Usage,
} from '../../ports/ModelProvider.js';
import { UpstreamFailed } from '../../ports/ModelProvider.js';
import { boundedBody } from './boundedBody.js';
import { connectionFailure } from './connectionFailure.js';
import { upstreamName } from './upstreamName.js';
import { readErrorBody, wordsOf } from './upstreamWords.js';

export type OpenAiOptions = {
  /** The server's API root, as OpenAI clients take it: `http://localhost:11434/v1`, `https://api.openai.com/v1`. */
  readonly baseUrl: string;
  /** The upstream key (read from the environment variable the config names), if the server needs one. */
  readonly apiKey: string | undefined;
  readonly upstreamModel: string;
  readonly timeoutMs: number;
  /**
   * Retries of upstream 408, 429, 5xx and connection errors inside one attempt, with the SDK's backoff (Retry-After
   * honoured). A 400, 401, 403, 404 or 422 is never retried (the SDK's rule): no retry mends it.
   */
  readonly maxRetries: number;
  /** The most bytes of answer one call may produce (`models[].maxAnswerBytes`; answerBound.ts says how they count). */
  readonly maxAnswerBytes: number;
};

/**
 * What an answer's body may hold beyond the answer itself, decoded: its id, model, usage and the rest of the envelope
 * (a few hundred bytes as servers write them; a reasoning model's `reasoning_content` is not counted in the answer).
 */
const envelopeBytes = 64 * 1024;

/**
 * Why an upstream call failed, as a failure the processing can tell apart (`problem`), with words safe for the log:
 * which upstream, status and message or cause, never the key. Other errors (an abort) are passed on as they are.
 */
const upstreamFailure = (error: unknown, upstream: string, timeoutMs: number): unknown => {
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    // The words upstreamFetch read from the error body (bounded and cleaned there), or none.
    const said = (error.error as { message?: unknown } | undefined)?.message;
    const words = typeof said === 'string' && said !== '' ? said : undefined;
    const message = `upstream ${upstream} answered ${error.status}${words === undefined ? ' (no body)' : `: ${words}`}`;
    return new UpstreamFailed(message.slice(0, 800), { kind: 'status', status: error.status, said: words });
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new UpstreamFailed(`upstream ${upstream} timed out`, { kind: 'timeout', afterMs: timeoutMs });
  if (error instanceof OpenAI.APIConnectionError) {
    const failure = connectionFailure(error);
    return new UpstreamFailed(`upstream ${upstream} unreachable: ${failure.detail}`, {
      kind: 'unreachable',
      ...failure,
    });
  }
  return error;
};

/**
 * An error answer as the SDK reads it: the upstream's own words (upstreamWords.ts: bounded, cleaned) in OpenAI's
 * shape, whatever shape the upstream wrote them in (vLLM's top-level `message` the SDK would not see), or no body.
 */
const errorAnswer = async (response: Response, headers: Headers): Promise<Response> => {
  const words = response.body === null ? undefined : wordsOf(await readErrorBody(response.body));
  headers.delete('content-length');
  headers.delete('content-encoding');
  if (words !== undefined) headers.set('content-type', 'application/json');
  const init = { status: response.status, statusText: response.statusText, headers };
  return new Response(words === undefined ? null : JSON.stringify({ error: { message: words } }), init);
};

/**
 * `fetch` as the SDK is given it. Each call carries a `traceparent` of the request (traceContext.ts) with a span of
 * its own, retries included. An answer no retry mends (`isPermanent`: 400, 401, 403, 404, 422) loses an
 * `x-should-retry` header: the SDK would otherwise retry whatever an upstream marks so, and a wrong base URL or key is
 * refused every time. An error answer's words are kept (`errorAnswer`). And the body is cut off past `maxBytes`
 * decoded (boundedBody.ts), of the whole body or of each event of a stream (`perEvent`), erroring with `passed()`:
 * the SDK reads either whole, and the cut comes after its retries, so an upstream that answers too much is not asked
 * again within the attempt.
 */
const upstreamFetch =
  (maxBytes: number, perEvent: boolean, passed: () => Error): typeof fetch =>
  async (input, init) => {
    const sent = new Headers(init?.headers);
    const reqId = sent.get('x-request-id');
    if (reqId !== null) sent.set('traceparent', traceparentFor(reqId));
    const response = await fetch(input, { ...init, headers: sent });
    const headers = new Headers(response.headers);
    if (isPermanent({ kind: 'status', status: response.status })) headers.delete('x-should-retry');
    if (response.status >= 400) return errorAnswer(response, headers);
    if (response.body === null) return response;
    return new Response(boundedBody(response.body, maxBytes, perEvent, passed), {
      status: response.status,
      statusText: response.statusText,
      headers,
    });
  };

type Completion = OpenAI.Chat.Completions.ChatCompletion;
type CompletionParams = OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming;
type UpstreamMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;

/** A conversation as an upstream takes it: `developer` is sent as `system`, which every compatible server knows. */
const upstreamMessages = (messages: readonly ChatMessage[]): UpstreamMessage[] =>
  messages.map((message) => {
    if (message.role === 'developer') return { role: 'system', content: message.content };
    if (message.role === 'assistant')
      return message.tool_calls === undefined || message.tool_calls.length === 0
        ? { role: 'assistant', content: message.content }
        : { role: 'assistant', content: message.content, tool_calls: [...message.tool_calls] };
    return message as UpstreamMessage;
  });

const finishReasons: ReadonlySet<string> = new Set(['stop', 'length', 'tool_calls', 'content_filter']);
/** The upstream's finish reason in airs' words (`function_call`, the old name, is a tool call; unknown ones stop). */
const finishOf = (reason: string | null | undefined): FinishReason =>
  reason === 'function_call'
    ? 'tool_calls'
    : reason != null && finishReasons.has(reason)
      ? (reason as FinishReason)
      : 'stop';

const usageOf = (usage: OpenAI.CompletionUsage | null | undefined): Usage | undefined =>
  usage == null || typeof usage.prompt_tokens !== 'number' || typeof usage.completion_tokens !== 'number'
    ? undefined
    : { inputTokens: usage.prompt_tokens, outputTokens: usage.completion_tokens };

/** A whole (not streamed) answer. */
const generationOf = (completion: Completion, maxAnswerBytes: number, passed: () => Error): Generation => {
  const choice = completion?.choices?.[0];
  const message = choice?.message;
  const calls = (message?.tool_calls ?? []).filter((call) => call.type === 'function');
  if (typeof message?.content !== 'string' && calls.length === 0)
    throw new Error('upstream answer has no choices[0].message.content');
  const generation: Generation = {
    text: message?.content ?? '',
    toolCalls:
      calls.length === 0
        ? undefined
        : calls.map(({ id, function: { name, arguments: args } }) => ({
            id,
            type: 'function',
            function: { name, arguments: args },
          })),
    finishReason: finishOf(choice?.finish_reason),
    usage: usageOf(completion.usage),
  };
  // The body was bounded with its envelope; the answer's own bytes are bounded exactly.
  if (answerBytes(generation) > maxAnswerBytes) throw passed();
  return generation;
};

/**
 * Tool calls as they stream in pieces: each call's id and name come first, its arguments after, by index. Each piece
 * is counted as it comes (`counted` says whether the answer is still within its bound); a piece that carries nothing
 * makes no call, so calls are never more than the bytes counted.
 */
const createToolCallAssembler = (counted: (piece: string) => boolean) => {
  const calls = new Map<number, { id: string; name: string; arguments: string }>();
  return {
    add(pieces: readonly OpenAI.Chat.Completions.ChatCompletionChunk.Choice.Delta.ToolCall[]): boolean {
      for (const piece of pieces) {
        const id = piece.id ?? '';
        const name = piece.function?.name ?? '';
        const args = piece.function?.arguments ?? '';
        if (id === '' && name === '' && args === '') continue;
        if (!counted(id) || !counted(name) || !counted(args)) return false;
        let call = calls.get(piece.index);
        if (call === undefined) {
          call = { id: '', name: '', arguments: '' };
          calls.set(piece.index, call);
        }
        if (id !== '') call.id = id;
        call.name += name;
        call.arguments += args;
      }
      return true;
    },
    calls: (): ToolCall[] =>
      [...calls]
        .sort(([a], [b]) => a - b)
        .map(([, call], i) => ({
          id: call.id || `call_${i}`,
          type: 'function',
          function: { name: call.name, arguments: call.arguments },
        })),
  };
};

/**
 * The `openai` provider: any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama, LM Studio,
 * TGI, hosted APIs), through the official `openai` client. A prompt is sent as one user message, a conversation as
 * its messages, and the request's generation parameters and tools as they were given. When somebody streams the
 * request (`onDelta`), the upstream is asked to stream too, and each piece of text is passed on as it comes; the
 * answer is the same either way.
 */
export const openAiProvider = (options: OpenAiOptions): ModelProvider => {
  const upstream = upstreamName(options.baseUrl);
  const { maxAnswerBytes } = options;
  const tooLarge = () => answerTooLarge(maxAnswerBytes, `upstream ${upstream}`);
  /** A client whose bodies are bounded as `upstreamFetch` says: whole answers, or streams event by event. */
  const clientFor = (perEvent: boolean) =>
    new OpenAI({
      baseURL: options.baseUrl,
      // Local servers need no key; the SDK insists on one, and an unused placeholder is harmless.
      apiKey: options.apiKey ?? 'no-key',
      timeout: options.timeoutMs,
      maxRetries: options.maxRetries,
      fetch: upstreamFetch(maxAnswerBytes + envelopeBytes, perEvent, tooLarge),
    });
  const whole = clientFor(false);
  const streaming = clientFor(true);
  const streamed = async (
    body: CompletionParams,
    call: OpenAI.RequestOptions,
    onDelta: (text: string) => void,
    startedAt: number,
  ) => {
    let firstTokenMs: number | undefined;
    const stream = await streaming.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      call,
    );
    let text = '';
    let finish: string | null | undefined;
    let usage: Usage | undefined;
    // Counted as the pieces come: the call ends (and the stream is closed) as soon as the bound is passed.
    const count = answerCounter(maxAnswerBytes);
    const tools = createToolCallAssembler(count.add);
    for await (const chunk of stream) {
      usage = usageOf(chunk.usage) ?? usage;
      const choice = chunk.choices?.[0];
      if (choice === undefined) continue;
      const piece = choice.delta?.content;
      // The first token: the first piece of text or of a tool call (a role-only first chunk is no token yet).
      if (firstTokenMs === undefined && ((typeof piece === 'string' && piece !== '') || choice.delta?.tool_calls))
        firstTokenMs = performance.now() - startedAt;
      if (typeof piece === 'string' && piece !== '') {
        if (!count.add(piece)) throw tooLarge();
        text += piece;
        onDelta(piece);
      }
      if (choice.delta?.tool_calls && !tools.add(choice.delta.tool_calls)) throw tooLarge();
      finish = choice.finish_reason ?? finish;
    }
    const toolCalls = tools.calls();
    const generation: Generation = {
      text,
      toolCalls: toolCalls.length === 0 ? undefined : toolCalls,
      finishReason: finishOf(finish),
      usage,
      firstTokenMs,
    };
    // Exactly, as a whole answer is: ids airs gave to calls that came without one count too.
    if (answerBytes(generation) > maxAnswerBytes) throw tooLarge();
    return generation;
  };
  return {
    generate: async ({ requestId, prompt, messages, params, signal, onDelta }) => {
      // The request's id, for the upstream's logs; upstreamFetch adds the trace.
      const headers = requestId === undefined ? undefined : { 'x-request-id': requestId };
      // The model's passed-through fields go as extra fields of the body (the SDK sends what it is given).
      const { extraBody, ...known } = params ?? {};
      const body = {
        ...extraBody,
        ...(known as Omit<CompletionParams, 'model' | 'messages'>),
        model: options.upstreamModel,
        messages: upstreamMessages(messages ?? [{ role: 'user', content: prompt }]),
      } as CompletionParams;
      const startedAt = performance.now();
      try {
        if (onDelta !== undefined) return await streamed(body, { signal, headers }, onDelta, startedAt);
        // A whole answer's first token is seen with its first byte: when its headers came (the body follows them).
        const call = whole.chat.completions.create(body, { signal, headers });
        let firstTokenMs: number | undefined;
        call.asResponse().then(
          () => {
            firstTokenMs = performance.now() - startedAt;
          },
          () => {},
        );
        const generation = generationOf(await call, maxAnswerBytes, tooLarge);
        return { ...generation, firstTokenMs };
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        if (error instanceof Error && error.message.startsWith('upstream answer')) throw error;
        throw upstreamFailure(error, upstream, options.timeoutMs);
      }
    },
  };
};
