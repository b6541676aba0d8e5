import type { RequestView } from '../../../app/Requests.js';
import { sseEvent } from '../sse.js';
import {
  functionCallItemOf,
  messageItemIdOf,
  messageItemOf,
  outputTextOf,
  type ResponseObjectOptions,
  responseIdOf,
  responseObjectOf,
} from './responseObject.js';

/**
 * OpenAI's Responses stream events for one request, numbered (`sequence_number`, from 0) in the order this stream
 * writes them:
 *
 *   response.created (status queued, no output)
 *   response.in_progress                              once a worker has the request (or it is seen finished)
 *   response.output_item.added (message)              at the first piece of text, or at the end
 *   response.content_part.added (output_text)
 *   response.output_text.delta ...                    live pieces, or the whole (remaining) text at the end
 *   response.output_text.done, response.content_part.done, response.output_item.done
 *   for each tool call: response.output_item.added (function_call), response.function_call_arguments.delta,
 *                       response.function_call_arguments.done, response.output_item.done
 *   response.completed | response.failed | error
 *
 * The message is left out when the model only called tools (as in the Response's `output`). A stream of a request
 * that is already finished is a function of its answer: one delta with the whole text, so its numbering is the same
 * every time, which is what `starting_after` relies on. Events numbered `startingAfter` or lower are counted but not
 * written.
 */
export const responseEventWriter = (
  reqId: string,
  options: ResponseObjectOptions & { readonly startingAfter?: number | undefined },
) => {
  let sequence = 0;
  let inProgress = false;
  /** The message's text so far, once its item is open. */
  let message: string | undefined;
  const itemId = messageItemIdOf(reqId);
  const skipped = options.startingAfter ?? -1;

  /** The frames of some events (those past `startingAfter`), numbered. */
  const frames = (...events: Record<string, unknown>[]): string => {
    let text = '';
    for (const event of events) {
      const sequence_number = sequence++;
      if (sequence_number > skipped) text += sseEvent({ ...event, sequence_number }, event.type as string);
    }
    return text;
  };

  const part = { item_id: itemId, output_index: 0, content_index: 0 };

  const openMessage = () => {
    message = '';
    return frames(
      { type: 'response.output_item.added', output_index: 0, item: messageItemOf(reqId, '', 'in_progress') },
      { type: 'response.content_part.added', ...part, part: outputTextOf('') },
    );
  };

  const delta = (text: string) => {
    message = (message ?? '') + text;
    return frames({ type: 'response.output_text.delta', ...part, delta: text, logprobs: [] });
  };

  const closeMessage = (text: string) =>
    frames(
      { type: 'response.output_text.done', ...part, text, logprobs: [] },
      { type: 'response.content_part.done', ...part, part: outputTextOf(text) },
      { type: 'response.output_item.done', output_index: 0, item: messageItemOf(reqId, text, 'completed') },
    );

  const toolCalls = (view: RequestView, first: number) =>
    (view.toolCalls ?? [])
      .map((call, i) => {
        const output_index = first + i;
        const added = functionCallItemOf(reqId, i, call, 'in_progress');
        const item_id = added.id;
        return frames(
          { type: 'response.output_item.added', output_index, item: added },
          { type: 'response.function_call_arguments.delta', item_id, output_index, delta: call.function.arguments },
          {
            type: 'response.function_call_arguments.done',
            item_id,
            output_index,
            name: call.function.name,
            arguments: call.function.arguments,
          },
          { type: 'response.output_item.done', output_index, item: functionCallItemOf(reqId, i, call, 'completed') },
        );
      })
      .join('');

  const startedOnce = (view: RequestView) => {
    if (inProgress) return '';
    inProgress = true;
    return frames({ type: 'response.in_progress', response: responseObjectOf(view, options, 'in_progress') });
  };

  const error = (code: string, type: string, message: string) =>
    // OpenAI's `error` event has `code`, `message` and `param`; the nested `error` makes the official SDKs raise
    // an APIError with the message (they raise on any event whose data has `error`), and the Vercel AI SDK reads it.
    frames({ type: 'error', code, message, param: null, error: { type, code, message, param: null } });

  return {
    /** The first event: the Response, queued, with no output. */
    created: (view: RequestView) =>
      frames({ type: 'response.created', response: responseObjectOf(view, options, 'queued') }),

    /** `response.in_progress`, once. */
    inProgress: startedOnce,

    /** Whether `response.in_progress` was written. */
    get started() {
      return inProgress;
    },

    /** The next piece of the answer's text (opening the message at the first). */
    delta: (view: RequestView, text: string) =>
      startedOnce(view) + (message === undefined ? openMessage() : '') + (text === '' ? '' : delta(text)),

    /**
     * The end: a completed request's output (the message closed with its full text, which the deltas sent before
     * already add up to, then its tool calls) and `response.completed`; a failed one's `response.failed`.
     */
    finished: (view: RequestView): string => {
      let text = startedOnce(view);
      if (view.status === 'failed')
        return text + frames({ type: 'response.failed', response: responseObjectOf(view, options) });
      const answer = view.response ?? '';
      const calls = view.toolCalls ?? [];
      const withMessage = message !== undefined || answer !== '' || calls.length === 0;
      if (withMessage) {
        if (message === undefined) text += openMessage();
        if (answer.length > (message ?? '').length) text += delta(answer.slice((message ?? '').length));
        text += closeMessage(answer);
      }
      text += toolCalls(view, withMessage ? 1 : 0);
      return text + frames({ type: 'response.completed', response: responseObjectOf(view, options) });
    },

    /** A cancelled request: it will never have an answer. */
    cancelled: () =>
      error(
        'cancelled',
        'invalid_request_error',
        `request ${responseIdOf(reqId)} was cancelled; it will not be processed`,
      ),

    /** The request is gone (it expired while streamed). */
    gone: (message: string) => error('not_found', 'invalid_request_error', message),

    /** An attempt whose text was already streamed failed: what was sent is not the answer, which comes later. */
    interrupted: () =>
      error(
        'stream_interrupted',
        'server_error',
        `the attempt streaming ${responseIdOf(reqId)} failed after part of its text was sent; the request is tried ` +
          `again: retrieve ${responseIdOf(reqId)} for its answer`,
      ),
  };
};

export type ResponseEventWriter = ReturnType<typeof responseEventWriter>;
