import type { RequestView } from '../../../app/Requests.js';

/** Response ids are the request's id under OpenAI's prefix: `req_X` is answered as `resp_X`, and back. */
export const responseIdOf = (reqId: string): string => (reqId.startsWith('req_') ? `resp_${reqId.slice(4)}` : reqId);

/** The request id a response id names (`resp_X` → `req_X`); a `req_` id from `/v1/ai` is taken as it is. */
export const requestIdOf = (responseId: string): string =>
  responseId.startsWith('resp_') ? `req_${responseId.slice(5)}` : responseId;

/** How an unfinished request is shown: `queued` while it waits and `in_progress` while a worker has it, or `queued`. */
export type ResponseObjectOptions = { readonly unfinishedAs?: 'queued' | 'by-state' };

/** The Response's status: `queued` while it waits, `in_progress` while a worker has it (unless asked otherwise). */
const statusOf = (view: RequestView, options: ResponseObjectOptions): string => {
  if (view.status !== 'queued') return view.status;
  if (options.unfinishedAs === 'queued') return 'queued';
  return view.state.status === 'processing' ? 'in_progress' : 'queued';
};

const seconds = (ms: number | undefined) => (ms === undefined ? null : Math.floor(ms / 1000));

/**
 * A request as OpenAI's Response object (`object: "response"`), with the fields the SDKs read: a completed one
 * carries its text as one assistant message with one `output_text` part (from which the SDKs make `output_text`).
 * Token usage is not known to airs: `usage` is null.
 */
export const responseObjectOf = (view: RequestView, options: ResponseObjectOptions = {}) => {
  const { context } = view.state;
  const status = statusOf(view, options);
  const completed = view.status === 'completed';
  return {
    id: responseIdOf(context.reqId),
    object: 'response',
    created_at: seconds(context.createdAt),
    status,
    completed_at: completed ? seconds(context.completedAt) : null,
    model: context.model,
    output: completed
      ? [
          {
            type: 'message',
            id: `msg_${context.reqId.slice(4)}`,
            status: 'completed',
            role: 'assistant',
            content: [{ type: 'output_text', text: view.response ?? '', annotations: [] }],
          },
        ]
      : [],
    error:
      view.status === 'failed'
        ? { code: 'server_error', message: 'processing of this request failed after its retries; submit it again' }
        : null,
    incomplete_details: null,
    instructions: null,
    metadata: {},
    parallel_tool_calls: false,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    usage: null,
  };
};
