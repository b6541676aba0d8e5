import type { NotFound } from '../domain/errors.js';
import type { Principal } from './Auth.js';
import type { LiveListener, LiveOutputShape } from './LiveOutput.js';
import type { RequestsShape, RequestView } from './Requests.js';

/**
 * What a caller streaming a request sees, in order:
 * - `delta`: the next piece of the answer's text (live from this process's worker, or the whole text, or the rest of
 *   it, once the request completed);
 * - `idle`: nothing happened for a while (the stream sends a keep-alive comment through proxies);
 * - `final`: the request is final (completed, failed, cancelled) or gone (expired): the view to end the stream with;
 * - `broken`: an attempt whose text was already streamed failed (its retry will write another text): what was sent
 *   cannot be taken back, so the stream ends here; the request itself goes on and can be polled.
 */
export type FollowEvent =
  | { readonly type: 'delta'; readonly text: string }
  | { readonly type: 'idle' }
  | { readonly type: 'final'; readonly view: RequestView | NotFound }
  | { readonly type: 'broken' };

type Heard =
  | { readonly kind: 'begun' }
  | { readonly kind: 'delta'; readonly text: string }
  | { readonly kind: 'ended'; readonly answered: boolean };

/**
 * Follows one request for a caller that streams it. `listen` must be called with the request's id before its submit
 * is committed (SubmitOptions.beforeCommit), so that an attempt started with the submit is heard from its beginning;
 * a caller that arrives later (a retrieve) hears only attempts that begin after it, and otherwise gets the text when
 * the request completes. Nothing is kept but the text this caller was sent, which it was sent anyway.
 */
export const followRequest = (live: LiveOutputShape) => {
  const heard: Heard[] = [];
  let wake: (() => void) | undefined;
  const tell = (item: Heard) => {
    heard.push(item);
    wake?.();
  };
  const listener: LiveListener = {
    begun: () => tell({ kind: 'begun' }),
    delta: (text) => tell({ kind: 'delta', text }),
    ended: (answered) => tell({ kind: 'ended', answered }),
  };
  let stopListening: (() => void) | undefined;

  return {
    listen(reqId: string) {
      stopListening ??= live.listen(reqId, listener);
    },
    /**
     * Stops listening (once the events are done, or when they will never be asked for: a submit that was refused, or
     * that answered an earlier request for its idempotency key, after `listen` was called with the id it would have had).
     */
    stop() {
      stopListening?.();
      stopListening = undefined;
      heard.length = 0;
    },
    /**
     * The request's events until it is final, broken, or `signal` aborts (the caller went away). `idleMs`: how long
     * nothing may happen before an `idle`.
     */
    async *events(
      requests: RequestsShape,
      principal: Principal,
      reqId: string,
      options: { readonly signal: AbortSignal; readonly idleMs: number },
    ): AsyncGenerator<FollowEvent> {
      this.listen(reqId);
      let sent = '';
      /** Text of the attempt being heard live; undefined while no attempt is heard. */
      let attempt: string | undefined;
      /** One wait for the request to settle at a time (it also ends after `idleMs`), however many pieces arrive. */
      let settling: Promise<false> | undefined;
      let quietSince = Date.now();
      try {
        for (;;) {
          while (heard.length > 0) {
            const item = heard.shift() as Heard;
            if (item.kind === 'begun') attempt = '';
            else if (item.kind === 'delta' && attempt !== undefined) {
              attempt += item.text;
              sent += item.text;
              quietSince = Date.now();
              yield { type: 'delta', text: item.text };
            } else if (item.kind === 'ended') {
              if (!item.answered && attempt !== undefined && attempt !== '') {
                yield { type: 'broken' };
                return;
              }
              attempt = undefined;
            }
          }
          const view = await requests.find(principal, reqId);
          if (!('status' in view) || view.status !== 'queued') {
            const text = 'status' in view && view.status === 'completed' ? (view.response ?? '') : undefined;
            if (text !== undefined && sent !== '' && !text.startsWith(sent)) {
              // Cannot happen when the pieces are the answer's text; said rather than streamed wrong.
              yield { type: 'broken' };
              return;
            }
            if (text !== undefined && text.length > sent.length) yield { type: 'delta', text: text.slice(sent.length) };
            yield { type: 'final', view };
            return;
          }
          if (options.signal.aborted) return;
          // Pieces heard while the caller was busy writing the last ones are taken at once.
          const heardSomething =
            heard.length > 0
              ? Promise.resolve(true as const)
              : new Promise<true>((resolve) => {
                  wake = () => resolve(true);
                });
          settling ??= requests.settled(reqId, options.idleMs, options.signal).then(() => false as const);
          const woke = await Promise.race([heardSomething, settling]);
          wake = undefined;
          if (!woke) settling = undefined;
          if (options.signal.aborted) return;
          if (!woke && heard.length === 0 && Date.now() - quietSince >= options.idleMs) {
            const now = await requests.find(principal, reqId);
            if ('status' in now && now.status === 'queued') {
              quietSince = Date.now();
              yield { type: 'idle' };
            }
          }
        }
      } finally {
        this.stop();
      }
    },
  };
};

export type Follower = ReturnType<typeof followRequest>;
