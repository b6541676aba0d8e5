import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { isRefusal } from '../domain/commands.js';
import {
  type IdempotencyKeyReused,
  InvalidRequest,
  NotFound,
  ProcessingFailed,
  type QuotaExceeded,
  type RateLimited,
  Unavailable,
} from '../domain/errors.js';
import { couldBeId, idForMessage, lifetimeInWords } from '../domain/identifiers.js';
import { queuedRequestOf } from '../domain/queuePosition.js';
import { type PublicStatus, publicStatus } from '../domain/request/publicStatus.js';
import { isCancellable } from '../domain/request/questions.js';
import type { RequestState } from '../domain/request/state.js';
import { AppClock } from '../ports/Clock.js';
import { Ids } from '../ports/Ids.js';
import type { ToolCall } from '../ports/ModelProvider.js';
import { Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import type { Principal } from './Auth.js';
import { Committer } from './Committer.js';
import { cancelledWords } from './cancelAfter.js';
import { Metrics } from './Metrics.js';
import { Models } from './Models.js';
import { Processor } from './processing/Processor.js';
import { answerOf } from './storedInput.js';
import { createSubmits, type SubmitInput, type SubmitOptions, type Submitted } from './submitRequest.js';
import { failedMessage } from './upstreamProblems.js';

// A submit's input, options and answer are defined with the submit; importers keep reading them here.
export type { SubmitInput, SubmitOptions, Submitted } from './submitRequest.js';

/** A request as its account may see it: its state, and its answer once completed (text, and tools it calls). */
export type RequestView = {
  readonly state: RequestState;
  readonly status: Exclude<PublicStatus, 'unknown' | 'expired'>;
  readonly response?: string | undefined;
  readonly toolCalls?: readonly ToolCall[] | undefined;
};

/** A request as a poll answers it: waiting or being processed, or completed with its answer. */
export type PollView = RequestView & {
  readonly status: 'queued' | 'completed';
  /** While it waits for a worker (not while it is processed): how many due requests of its model go first
   * (domain/queuePosition.ts, contract 20). */
  readonly queuePosition?: number | undefined;
};

export interface RequestsShape {
  /** Validates a `/v1/ai` body and queues it; resolves only once its `RequestQueued` event is durable on disk. */
  submit(
    principal: Principal,
    body: unknown,
    options?: SubmitOptions,
  ): Promise<Submitted | InvalidRequest | Unavailable | IdempotencyKeyReused | RateLimited | QuotaExceeded>;
  /**
   * The `503` a submit would get now whatever its body (no worker of this process free, its backlog full:
   * processing/admission.ts), or undefined. Lets a face refuse before it spends the caller's rate limit and reads the
   * body; the submit itself decides again.
   */
  refusesQueuing(): Unavailable | undefined;
  /** Queues an input already understood (model and size are checked here); durable when it resolves. */
  submitInput(
    principal: Principal,
    input: SubmitInput,
    options?: SubmitOptions,
  ): Promise<Submitted | InvalidRequest | Unavailable | IdempotencyKeyReused | RateLimited | QuotaExceeded>;
  /** What the principal's account may see of a request. Another account's request is answered as unknown. */
  poll(
    principal: Principal,
    reqId: string | undefined,
  ): Promise<PollView | InvalidRequest | NotFound | ProcessingFailed>;
  /** The request, if it is the principal's account's and has not expired (cancelled and failed ones included). */
  find(principal: Principal, reqId: string): Promise<RequestView | NotFound>;
  /**
   * Cancels a queued or processing request (a model call in flight is aborted, a late result dropped) and answers
   * the request as it is then. Cancelling a cancelled request answers it again; a completed or failed one is refused.
   */
  cancel(principal: Principal, reqId: string): Promise<RequestView | NotFound | InvalidRequest | Unavailable>;
  /**
   * Resolves once the request is no longer queued (completed, failed, cancelled, expired), or after `timeoutMs`, or
   * when `signal` aborts, whichever comes first.
   */
  settled(reqId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
}

export class Requests extends Context.Service<Requests, RequestsShape>()('airs/Requests') {}

/**
 * Submit and poll. Both run on every API call, so they are plain functions (a promise, a value) rather than Effects:
 * the service is still built and wired as an Effect layer (see docs/decisions.md).
 */
export const RequestsLayer = Layer.effect(
  Requests,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    const models = yield* Models;
    const processor = yield* Processor;
    const committer = yield* Committer;
    const metrics = Option.getOrUndefined(yield* Effect.serviceOption(Metrics));
    const lifetime = lifetimeInWords(config.requestTtlSeconds);
    const notFound = (reqId: string) =>
      new NotFound({
        message: `no request ${idForMessage(reqId)}; it may never have existed or it expired (requests live ${lifetime})`,
      });

    // Submits are built once here, with what they need (submitRequest.ts).
    const { submit, submitInput } = createSubmits({ config, store, clock, ids, models, processor, committer, metrics });

    /** The request if the principal's account may see it now, with its public status. */
    const visibleRequest = async (principal: Principal, reqId: string) => {
      // Text that is not an id of airs's form names nothing: the store is not asked (a NUL, a quote, 10,000
      // characters), and every store answers it as it answers an unknown id (contract 18).
      if (!couldBeId('request', reqId)) return undefined;
      const stored = await store.reads.requestWithText(reqId);
      if (stored === undefined || stored.state.context.accountId !== principal.accountId) return undefined;
      const now = clock.now();
      const status = publicStatus(stored.state, now);
      if (status === 'unknown' || status === 'expired') return undefined;
      return { state: stored.state, status, text: stored.text, now };
    };

    const poll: RequestsShape['poll'] = async (principal, reqId) => {
      if (reqId === undefined || reqId === '')
        return new InvalidRequest({ message: 'query parameter req_id is required' });
      const visible = await visibleRequest(principal, reqId);
      if (visible === undefined) return notFound(reqId);
      const { status } = visible;
      if (status === 'failed') {
        const said = visible.state.context.failureSaid;
        return new ProcessingFailed({ message: failedMessage(reqId, said, '; submit it again') });
      }
      if (status === 'cancelled') {
        return new NotFound({ message: cancelledWords(reqId, visible.state.context.cancelReason) });
      }
      const queuePosition = await queuePositionOf(visible.state, visible.now);
      return { ...viewOf(visible), status, ...(queuePosition === undefined ? {} : { queuePosition }) };
    };

    /** A waiting request's place in the claim's order (none once it is processed, or when it waits no more). */
    const queuePositionOf = (state: RequestState, now: number): Promise<number | undefined> | undefined => {
      if (state.status !== 'waiting') return undefined;
      return store.reads.queuePosition(
        queuedRequestOf(state.context),
        now,
        config.processing.promoteAfterSeconds * 1000,
      );
    };

    const viewOf = (visible: NonNullable<Awaited<ReturnType<typeof visibleRequest>>>): RequestView => {
      if (visible.status !== 'completed') return { state: visible.state, status: visible.status };
      const answer = answerOf(visible.text ?? '', visible.state.context.output);
      return {
        state: visible.state,
        status: visible.status,
        response: answer.text,
        toolCalls: answer.toolCalls.length === 0 ? undefined : answer.toolCalls,
      };
    };

    const find: RequestsShape['find'] = async (principal, reqId) => {
      const visible = await visibleRequest(principal, reqId);
      return visible === undefined ? notFound(reqId) : viewOf(visible);
    };

    const cancel: RequestsShape['cancel'] = async (principal, reqId) => {
      const visible = await visibleRequest(principal, reqId);
      if (visible === undefined) return notFound(reqId);
      if (visible.status === 'cancelled') return viewOf(visible);
      // The machine says what may be cancelled (at the instant the request was seen not expired).
      if (!isCancellable(visible.state, visible.now)) {
        return new InvalidRequest({
          message: `request ${reqId} is ${visible.status}; only a queued or in-progress request can be cancelled`,
        });
      }
      const outcome = await committer.send({ type: 'Cancel', reqId, now: clock.now() }, { fromApi: true });
      if (outcome instanceof Unavailable) return outcome;
      if (!isRefusal(outcome)) processor.cancelled(reqId);
      // Refused: it completed, failed or expired in the meantime; the answer says which, as the request is now.
      const after = await visibleRequest(principal, reqId);
      if (after === undefined) return notFound(reqId);
      if (isRefusal(outcome) && after.status !== 'cancelled') {
        return new InvalidRequest({
          message: `request ${reqId} is ${after.status}; only a queued or in-progress request can be cancelled`,
        });
      }
      return viewOf(after);
    };

    /**
     * Callers waiting for requests to settle look again when this process records an outcome of theirs
     * (`processor.outcome`), and whenever another process changed the store (it may have run their request, or
     * cancelled or expired it); at the latest every `settleCheckMs` (a clock that a test moves by hand).
     */
    const settleCheckMs = 1_000;
    const elsewhere = new Set<() => void>();
    let stopHearing: (() => void) | undefined;
    const hearOtherWriters = (wake: () => void) => {
      elsewhere.add(wake);
      stopHearing ??= store.reads.onChange(() => {
        for (const waiter of [...elsewhere]) waiter();
      });
      return () => {
        elsewhere.delete(wake);
        if (elsewhere.size === 0) {
          stopHearing?.();
          stopHearing = undefined;
        }
      };
    };
    const settled: RequestsShape['settled'] = async (reqId, timeoutMs, signal) => {
      const deadline = clock.now() + timeoutMs;
      for (;;) {
        const status = publicStatus(await store.reads.request(reqId), clock.now());
        if (status !== 'queued' || signal?.aborted === true) return;
        const left = deadline - clock.now();
        if (left <= 0) return;
        const looked = new AbortController();
        const stop = hearOtherWriters(() => looked.abort());
        const onAbort = () => looked.abort();
        signal?.addEventListener('abort', onAbort, { once: true });
        try {
          await processor.outcome(reqId, Math.min(left, settleCheckMs), looked.signal);
        } finally {
          stop();
          signal?.removeEventListener('abort', onAbort);
        }
      }
    };

    return Requests.of({ submit, refusesQueuing: processor.refusesNow, submitInput, poll, find, cancel, settled });
  }),
);
