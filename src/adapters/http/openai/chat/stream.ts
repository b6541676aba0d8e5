import type { Principal } from '../../../../app/Auth.js';
import { cancelledWords } from '../../../../app/cancelAfter.js';
import { type Follower, followRequest } from '../../../../app/followRequest.js';
import type { LiveOutputShape } from '../../../../app/LiveOutput.js';
import type { RequestsShape, RequestView } from '../../../../app/Requests.js';
import { failedMessage } from '../../../../app/upstreamProblems.js';
import { type ApiError, NotFound, ProcessingFailed } from '../../../../domain/errors.js';
import type { OpenCall } from '../../openCalls.js';
import { sseComment, sseDone, sseEvent, sseResponse } from '../../sse.js';
import { openAiErrorObject } from '../errors.js';
import { type ChunkHead, chunkHeadOf, chunkOf, finishReasonOf, toolCallsDelta, usageChunkOf } from './completion.js';

/**
 * A follower whose listening can be stopped before it streams anything: a submit that was refused, or that was
 * replayed (an idempotent repeat) and so is another request than the one listened to.
 */
export const stoppableFollower = (live: LiveOutputShape) => {
  let stop: (() => void) | undefined;
  const follower = followRequest({
    ...live,
    listen: (reqId, listener) => {
      stop = live.listen(reqId, listener);
      return stop;
    },
  });
  return { follower, listen: (reqId: string) => follower.listen(reqId), stop: () => stop?.() };
};

/** Why a request that is not completed ends: the error its caller gets, as a waiting call would (routes.ts). */
export const endingErrorOf = (view: RequestView | NotFound): ApiError | undefined => {
  if (!('status' in view)) return view;
  const reqId = view.state.context.reqId;
  if (view.status === 'failed')
    return new ProcessingFailed({
      message: failedMessage(reqId, view.state.context.failureSaid, ' after its retries; submit it again'),
    });
  if (view.status === 'cancelled')
    return new NotFound({ message: cancelledWords(reqId, view.state.context.cancelReason) });
  return undefined;
};

/** An error as the last event of a stream, in OpenAI's style: `data: {"error": {...}}`. */
const errorEvent = (error: ApiError) => sseEvent({ error: openAiErrorObject(error) });

/** A stream that broke after part of an answer was sent: that part cannot be taken back; the request goes on. */
const brokenError = (reqId: string) =>
  new ProcessingFailed({
    message:
      `the model's attempt failed after part of this answer was streamed; request ${reqId} is retried: ` +
      `GET /v1/ai?req_id=${reqId} answers it once it completes`,
  });

export type ChatStreamOptions = {
  readonly requests: RequestsShape;
  readonly principal: Principal;
  readonly reqId: string;
  readonly model: string;
  readonly includeUsage: boolean;
  /** Listened to the request before its submit was committed (a fresh one for a replayed submit). */
  readonly follower: Follower;
  /** The caller's connection: aborts when it goes away. */
  readonly signal: AbortSignal;
  /** An SSE comment when nothing was sent for this long (contract 13: at least every 15 s). */
  readonly keepAliveMs: number;
  /** The caller went away before the end: cancels the request. */
  readonly callerLeft: () => void;
  readonly headers: Readonly<Record<string, string>>;
  /** The call's place among the open calls (openCalls.ts): the stream gives it back when it ends. */
  readonly openCall?: OpenCall | undefined;
};

/**
 * A streaming chat completion (contract 13): a first chunk with the assistant's role, the text's deltas as the model
 * writes them (or the whole text once completed), the tools it calls as one chunk, a chunk with the finish reason,
 * the usage chunk when asked, then `data: [DONE]`. A request that fails, is cancelled or expires ends the stream with
 * an error event; so does a break (an attempt that failed after its text was streamed), while the request goes on.
 * A caller that goes away cancels the request.
 */
export const chatStream = async (options: ChatStreamOptions): Promise<Response> => {
  const { requests, principal, reqId } = options;
  const stop = new AbortController();
  const left = () => {
    stop.abort();
    options.callerLeft();
  };
  options.signal.addEventListener('abort', left, { once: true });
  const first = await requests.find(principal, reqId);
  const head: ChunkHead = chunkHeadOf(
    reqId,
    options.model,
    'state' in first ? first.state.context.createdAt : Date.now(),
    options.includeUsage,
  );
  const ending = (view: RequestView | NotFound): string[] => {
    const error = endingErrorOf(view);
    if (error !== undefined) return [errorEvent(error)];
    if (!('status' in view)) return [errorEvent(view)];
    const frames = [];
    if (view.toolCalls !== undefined && view.toolCalls.length > 0)
      frames.push(sseEvent(chunkOf(head, toolCallsDelta(view.toolCalls))));
    frames.push(sseEvent(chunkOf(head, {}, finishReasonOf(view))));
    if (options.includeUsage) frames.push(sseEvent(usageChunkOf(head, view)));
    frames.push(sseDone);
    return frames;
  };
  async function* frames(): AsyncGenerator<string, void, undefined> {
    try {
      yield sseEvent(chunkOf(head, { role: 'assistant', content: '' }));
      const events = options.follower.events(requests, principal, reqId, {
        signal: stop.signal,
        idleMs: options.keepAliveMs,
      });
      for await (const event of events) {
        if (event.type === 'delta') yield sseEvent(chunkOf(head, { content: event.text }));
        else if (event.type === 'idle') yield sseComment('waiting');
        else if (event.type === 'broken') {
          yield errorEvent(brokenError(reqId));
          return;
        } else {
          yield* ending(event.view);
          return;
        }
      }
    } finally {
      options.signal.removeEventListener('abort', left);
    }
  }
  // The place goes to the stream only now that it exists: until then the route gives it back, whatever happens.
  return sseResponse(frames(), { headers: options.headers, cancelled: left, ended: options.openCall?.streamed() });
};
