import type { RequestView } from '../../../../app/Requests.js';
import { tierOf } from '../../../../domain/serviceTier.js';
import type { ToolCall } from '../../../../ports/ModelProvider.js';

/** Chat completion ids are the request's id under OpenAI's prefix: `req_X` is answered as `chatcmpl-X`. */
export const completionIdOf = (reqId: string): string =>
  reqId.startsWith('req_') ? `chatcmpl-${reqId.slice(4)}` : reqId;

/** `{prompt_tokens, completion_tokens, total_tokens}`, or null when the model did not tell. */
export const chatUsageOf = (view: RequestView) => {
  const { inputTokens, outputTokens } = view.state.context;
  if (inputTokens === undefined || outputTokens === undefined) return null;
  return { prompt_tokens: inputTokens, completion_tokens: outputTokens, total_tokens: inputTokens + outputTokens };
};

export const finishReasonOf = (view: RequestView): string => view.state.context.finishReason ?? 'stop';

const seconds = (ms: number) => Math.floor(ms / 1000);

/**
 * A completed request as OpenAI's `chat.completion`: one choice whose message holds the text and the tools the model
 * calls (content null when it only calls tools, as OpenAI answers), the finish reason, and the usage.
 */
export const chatCompletionOf = (view: RequestView) => {
  const { context } = view.state;
  const toolCalls = view.toolCalls ?? [];
  const text = view.response ?? '';
  return {
    id: completionIdOf(context.reqId),
    object: 'chat.completion',
    created: seconds(context.createdAt),
    model: context.servedBy ?? context.model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: toolCalls.length > 0 && text === '' ? null : text,
          refusal: null,
          ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
        },
        finish_reason: finishReasonOf(view),
        logprobs: null,
      },
    ],
    usage: chatUsageOf(view),
    // The tier it is served at (contract 20), as OpenAI's answers say it.
    service_tier: tierOf(context),
  };
};

/** What every chunk of one stream shares. */
export type ChunkHead = {
  readonly id: string;
  readonly created: number;
  readonly model: string;
  /** `stream_options.include_usage`: every chunk then carries `usage` (null but in the last one), as OpenAI's do. */
  readonly includeUsage: boolean;
};

export const chunkHeadOf = (reqId: string, model: string, createdAtMs: number, includeUsage: boolean): ChunkHead => ({
  id: completionIdOf(reqId),
  created: seconds(createdAtMs),
  model,
  includeUsage,
});

type Delta = {
  readonly role?: 'assistant';
  readonly content?: string;
  readonly tool_calls?: readonly (ToolCall & { readonly index: number })[];
};

/** A `chat.completion.chunk` with one choice. */
export const chunkOf = (head: ChunkHead, delta: Delta, finishReason: string | null = null) => ({
  id: head.id,
  object: 'chat.completion.chunk',
  created: head.created,
  model: head.model,
  choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }],
  ...(head.includeUsage ? { usage: null } : {}),
});

/** The tools the answer calls, whole, numbered by `index` as streamed tool calls are. */
export const toolCallsDelta = (calls: readonly ToolCall[]): Delta => ({
  tool_calls: calls.map((call, index) => ({ index, ...call })),
});

/** The last chunk when usage was asked for: no choices, the usage. */
export const usageChunkOf = (head: ChunkHead, view: RequestView) => ({
  id: head.id,
  object: 'chat.completion.chunk',
  created: head.created,
  model: head.model,
  choices: [],
  usage: chatUsageOf(view),
});
