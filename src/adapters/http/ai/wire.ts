import type { PollView, Submitted } from '../../../app/Requests.js';
import { type ServiceTier, tierOf } from '../../../domain/serviceTier.js';
import type { ToolCall } from '../../../ports/ModelProvider.js';

/**
 * The bodies of `/v1/ai` (product contract sections 1 and 2) from what the app answers: its field names are the
 * contract's, snake_case. The schemas of ../wireFormat.ts describe them; its type checks keep the two in step.
 */

/** The 202 of `POST /v1/ai`. */
export type AcceptedBody = { readonly request_id: string; readonly model: string };

/** When a request was made and finished, in Unix seconds (extra fields the contract allows on `/v1/ai`). */
type Times = {
  readonly created_at: number;
  readonly completed_at?: number;
  /** The service tier it is served at (contract 20). */
  readonly service_tier: ServiceTier;
};

/** Tokens a completed request's model read and wrote. */
type UsageBody = { readonly input_tokens: number; readonly output_tokens: number; readonly total_tokens: number };

/** The 200 of `GET /v1/ai`, with the contract's field names (and extra fields it allows). */
export type PollBody =
  | ({
      readonly req_id: string;
      readonly status: 'queued';
      readonly model: string;
      /** While it waits for a worker: how many due requests of its model go first (contract 20); absent once running. */
      readonly queue_position?: number;
    } & Times)
  | ({
      readonly req_id: string;
      readonly status: 'completed';
      readonly model: string;
      readonly response: string;
      readonly usage?: UsageBody;
      readonly tool_calls?: ToolCall[];
    } & Times);

export const acceptedBody = (submitted: Submitted): AcceptedBody => ({
  request_id: submitted.reqId,
  model: submitted.model,
});

const secondsOf = (ms: number) => Math.floor(ms / 1000);

/** A polled request's body. */
export const pollBody = (view: PollView): PollBody => {
  const { context } = view.state;
  const { reqId } = context;
  // The model that served it: a fallback's when one did (contract 19).
  const model = context.servedBy ?? context.model;
  const created_at = secondsOf(context.createdAt);
  const service_tier = tierOf(context);
  if (view.status === 'queued')
    return {
      req_id: reqId,
      status: 'queued',
      model,
      created_at,
      service_tier,
      ...(view.queuePosition === undefined ? {} : { queue_position: view.queuePosition }),
    };
  const { inputTokens, outputTokens } = context;
  return {
    req_id: reqId,
    status: 'completed',
    model,
    response: view.response ?? '',
    created_at,
    completed_at: secondsOf(context.completedAt ?? context.createdAt),
    service_tier,
    ...(view.toolCalls === undefined ? {} : { tool_calls: [...view.toolCalls] }),
    // The usage only when the model told it.
    ...(inputTokens === undefined || outputTokens === undefined
      ? {}
      : {
          usage: { input_tokens: inputTokens, output_tokens: outputTokens, total_tokens: inputTokens + outputTokens },
        }),
  };
};
