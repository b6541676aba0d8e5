import type { Principal } from '../../../app/Auth.js';
import type { Follower } from '../../../app/followRequest.js';
import type { RequestsShape, RequestView } from '../../../app/Requests.js';
import { NotFound } from '../../../domain/errors.js';
import type { OpenCall } from '../openCalls.js';
import { sseComment, sseResponse } from '../sse.js';
import type { ResponseSettings } from './generationSettings.js';
import { responseEventWriter } from './responseEvents.js';

/**
 * A keep-alive comment is written after this long without an event, so that proxies that close idle connections
 * (often at 30 or 60 s) keep a stream whose request waits in the queue open. Contract 13: at least every 15 s.
 */
export const keepAliveMs = 10_000;

export type ResponseStreamOptions = {
  readonly requests: RequestsShape;
  readonly principal: Principal;
  readonly reqId: string;
  /** Listening to the request already (a create listens before its submit is committed), or to listen from now. */
  readonly follower: Follower;
  readonly settings?: ResponseSettings | undefined;
  /** Events numbered this or lower are not written (`GET /v1/responses/{id}?stream=true&starting_after=N`). */
  readonly startingAfter?: number | undefined;
  readonly signal: AbortSignal;
  readonly idleMs?: number;
};

const isProcessing = (view: RequestView | NotFound) =>
  !(view instanceof NotFound) && view.state.status === 'processing';

/**
 * The frames of a request's Response stream (responseEvents.ts) until the request is final, its streamed attempt
 * broke, or `signal` aborts: its pieces of text as its worker writes them (when this process runs it and the stream
 * listened from the attempt's start), or its whole text when it completes; keep-alive comments while nothing happens.
 * `first` is the request as it was when the stream began.
 */
export async function* responseFrames(first: RequestView, options: ResponseStreamOptions): AsyncGenerator<string> {
  // Events at or before `starting_after` are written as nothing.
  for await (const frame of numberedFrames(first, options)) if (frame !== '') yield frame;
}

async function* numberedFrames(first: RequestView, options: ResponseStreamOptions): AsyncGenerator<string> {
  const { requests, principal, reqId } = options;
  const writer = responseEventWriter(reqId, {
    ...(options.settings === undefined ? {} : { settings: options.settings }),
    startingAfter: options.startingAfter,
  });
  yield writer.created(first);
  if (first.state.status === 'processing') yield writer.inProgress(first);
  const events = options.follower.events(requests, principal, reqId, {
    signal: options.signal,
    idleMs: options.idleMs ?? keepAliveMs,
  });
  for await (const event of events) {
    if (event.type === 'delta') {
      // The request as it is now is needed only for `response.in_progress`, before the first piece.
      const now = writer.started ? first : await requests.find(principal, reqId);
      yield writer.delta(now instanceof NotFound ? first : now, event.text);
    } else if (event.type === 'idle') {
      const now = await requests.find(principal, reqId);
      if (isProcessing(now)) yield writer.inProgress(now as RequestView);
      yield sseComment('keep-alive');
    } else if (event.type === 'broken') {
      const now = await requests.find(principal, reqId);
      // The attempt ended because the request was cancelled: say that, not that the stream broke.
      yield !(now instanceof NotFound) && now.status === 'cancelled' ? writer.cancelled() : writer.interrupted();
      return;
    } else {
      const { view } = event;
      if (view instanceof NotFound) yield writer.gone(view.message.replace(/\breq_/g, 'resp_'));
      else if (view.status === 'cancelled')
        yield (view.state.context.startedAt === undefined ? '' : writer.inProgress(view)) + writer.cancelled();
      else yield writer.finished(view);
      return;
    }
  }
}

/**
 * A request's Response stream as an answer. When the caller goes away the stream stops listening, and, when
 * `cancelOnDisconnect` (a streaming create that is not `background`), the request is cancelled: nobody waits for it.
 * Not when the server is stopping and closes the connection itself.
 */
export const responseStreamAnswer = (
  first: RequestView,
  options: Omit<ResponseStreamOptions, 'signal'> & {
    readonly headers: Readonly<Record<string, string>>;
    readonly cancelOnDisconnect: boolean;
    /** The connection's own signal (srvx aborts it when the connection closes before the answer ended). */
    readonly connection?: AbortSignal | undefined;
    /** False while the server is stopping: a connection it closes is not a caller going away. */
    readonly accepting?: () => boolean;
    /** The call's place among the open calls (openCalls.ts): the stream gives it back when it ends. */
    readonly openCall?: OpenCall | undefined;
  },
): Response => {
  const stop = new AbortController();
  let ended = false;
  const gone = () => {
    if (ended || stop.signal.aborted) return;
    stop.abort();
    // A restart ends the stream, not the request, which completes as every request does.
    if (options.cancelOnDisconnect && options.accepting?.() !== false)
      options.requests.cancel(options.principal, options.reqId).catch(() => {
        // A server stopping may refuse the cancel; the request then runs to its end like any other.
      });
  };
  options.connection?.addEventListener('abort', gone, { once: true });
  async function* frames() {
    try {
      yield* responseFrames(first, { ...options, signal: stop.signal });
    } finally {
      ended = true;
      options.connection?.removeEventListener('abort', gone);
      options.follower.stop();
    }
  }
  return sseResponse(frames(), { headers: options.headers, cancelled: gone, ended: options.openCall?.streamed() });
};
