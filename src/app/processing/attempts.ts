import type { Logger } from 'pino';
import { upstreamsOf } from '../../config.js';
import { isExpired } from '../../domain/request/questions.js';
import type { RetryPolicy } from '../../domain/request/retryPolicy.js';
import { tierOf } from '../../domain/serviceTier.js';
import type { UpstreamPlace } from '../../domain/upstreamChoice.js';
import type { ClockShape } from '../../ports/Clock.js';
import type { Generation } from '../../ports/ModelProvider.js';
import { StorageFault, type StoreShape } from '../../ports/Store.js';
import type { Held, Recorded, StoredAnswer, WorkQueueShape } from '../../ports/WorkQueue.js';
import type { CommitterShape } from '../Committer.js';
import type { MetricsShape, UpstreamCallOutcome } from '../Metrics.js';
import type { Model, ModelsShape } from '../Models.js';
import { type ModelInput, modelInputOf, storedAnswerOf } from '../storedInput.js';
import type { LineInputs } from './lineReader.js';
import type { CallFailure, CallOutcome, ModelCaller } from './modelCall.js';
import type { UpstreamHealthBook } from './upstreamHealthBook.js';

/** How long an outcome whose write failed waits before it is written again. */
const faultRetryMs = 1_000;

/**
 * An attempt this process runs: the request, its attempt number (the lease is for it), when its lease ends as its
 * durable start says, and its model if known.
 */
export type Attempt = {
  readonly reqId: string;
  readonly attempt: number;
  readonly leaseUntil?: number | undefined;
  readonly model?: string;
  /** The upstream of its model it holds a place on (chosen in the claim), if the model has upstreams. */
  readonly upstream?: string | undefined;
};

/** A model's answer as it is stored: its text (or the whole message, with tool calls), usage and ending. */
const answerOf = (generation: Generation): StoredAnswer => {
  const answer = storedAnswerOf(generation);
  return {
    text: answer.text,
    inputTokens: generation.usage?.inputTokens,
    outputTokens: generation.usage?.outputTokens,
    finishReason: generation.finishReason === 'stop' ? undefined : generation.finishReason,
    output: answer.output,
    firstTokenMs: generation.firstTokenMs,
  };
};

const outcomeLabel = (outcome: CallOutcome) =>
  outcome.ok ? 'completed' : outcome.reason.startsWith('timed out') ? 'timed_out' : 'failed';

/** The one upstream of a model that has only one (its calls are not placed, so their starts name none). */
const soleUpstream = (model: Model): string | undefined => {
  if (model.config.provider !== 'openai') return undefined;
  const upstreams = upstreamsOf(model.config);
  return upstreams.length === 1 ? upstreams[0]?.name : undefined;
};

/** The upstream call's outcome as counted (a failover counts its own calls `failed_over`). */
const upstreamOutcome = (outcome: CallOutcome): UpstreamCallOutcome =>
  outcome.ok ? 'ok' : outcome.reason === 'cancelled' ? 'cancelled' : 'failed';

/**
 * One attempt, from its durable start to its durable outcome: call the model once (the worker is let go as soon as it
 * answers), then record the outcome in the name of the attempt's owner. The machine records it only while that owner
 * still holds the attempt: a worker whose lease was taken over, or whose request was cancelled or expired meanwhile,
 * records nothing, and says why at `info` (these are races of normal operation, not faults).
 */
export const createAttemptRunner = (deps: {
  readonly store: StoreShape;
  readonly queue: WorkQueueShape;
  /** For an expiry the attempt finds due (not a move of the work queue). */
  readonly committer: CommitterShape;
  readonly models: ModelsShape;
  readonly clock: ClockShape;
  readonly log: Logger;
  readonly owner: string;
  readonly policy: RetryPolicy;
  readonly caller: ModelCaller;
  readonly metrics?:
    | Pick<MetricsShape, 'attemptStarted' | 'attemptEnded' | 'upstreamCalled' | 'queueWaited'>
    | undefined;
  /** Cancelled while its start was being recorded: its model is never called. */
  readonly cancelledEarly: (reqId: string) => boolean;
  /** The lease is gone or about to be (see leaseKeeper.ts): the model is not called; the attempt is given back. */
  readonly leaseLapsing: (reqId: string) => boolean;
  /** The lease was given up while the model was called (the call was aborted for it). */
  readonly leaseGivenUp: (reqId: string) => boolean;
  /** The model has answered (or the call ended): its worker is free. */
  readonly workerFree: () => void;
  /** A batch's line read from its input file (batches/lineInput.ts); absent, a line cannot be run here. */
  readonly lineInputs?: LineInputs | undefined;
  /** Each model's upstreams (Processor.ts, upstreamPlacesOf): with two or more, a call fails over. */
  readonly upstreams?: Readonly<Record<string, readonly UpstreamPlace[]>> | undefined;
  /** This process's upstream health: every call's outcome that is its upstream's goes into it. */
  readonly health?: UpstreamHealthBook | undefined;
}) => {
  const { store, committer, clock, log, owner } = deps;

  /**
   * What the attempt is given, and by which model, read from the store (a claimed request): its input, or (a batch's
   * line that cannot run) why not.
   */
  const inputOf = async (
    attempt: Attempt,
  ): Promise<{ readonly model: string | undefined; readonly input: ModelInput | CallFailure | undefined }> => {
    const stored = await store.reads.requestWithText(attempt.reqId);
    const model = attempt.model ?? stored?.state.context.model;
    const context = stored?.state.context;
    // Its first attempt: how long it waited in the queue, by tier (a retry's wait is its backoff's, not the queue's).
    if (attempt.attempt === 1 && context?.startedAt !== undefined)
      deps.metrics?.queueWaited(
        context.model,
        tierOf(context),
        Math.max(0, context.startedAt - context.createdAt) / 1000,
      );
    const kind = stored?.state.context.input;
    if (stored?.text === undefined) return { model, input: undefined };
    if (kind !== 'line') return { model, input: modelInputOf(stored.text, kind) };
    // A batch's line: read from its input file now (held only while its attempt runs).
    const input =
      deps.lineInputs === undefined
        ? { reason: 'batch lines are not run by this process', said: 'this line could not be read' }
        : await deps.lineInputs(stored.text);
    return { model, input };
  };

  /** Why an outcome was refused, read from the request as it is now. */
  const refusedBecause = async (reqId: string): Promise<'cancelled' | 'expired' | 'taken over'> => {
    const state = await store.reads.request(reqId);
    if (state?.status === 'cancelled') return 'cancelled';
    if (state === undefined || isExpired(state, clock.now())) return 'expired';
    return 'taken over';
  };

  /**
   * Writes an outcome, again and again while the write fails (a full disk): the attempt stays this process's (its
   * lease is renewed) until its outcome is on disk, as nobody else may take it over meanwhile. Undefined when the pool
   * stopped first: the attempt is then given back.
   */
  const recordUntilWritten = async (held: Held, record: (now: number) => Promise<Recorded>) => {
    for (;;) {
      try {
        return await record(clock.now());
      } catch (error) {
        logAttemptFault(log, held.reqId, error);
        if (deps.caller.stopped()) return undefined;
        await new Promise((resolve) => setTimeout(resolve, faultRetryMs));
        if (deps.caller.stopped()) return undefined;
      }
    }
  };

  /** Each call's outcome, in the health book (a failure only when it is the upstream's; a cancel changes nothing). */
  const learn = (model: Model, upstream: string | undefined, outcome: CallOutcome) => {
    const book = deps.health;
    if (book === undefined || upstream === undefined) return;
    if (outcome.ok) book.succeeded(model.config.id, upstream);
    else if (outcome.upstreams === true) book.failed(model.config.id, upstream, outcome.reason, clock.now());
  };

  /** The names of a model's upstreams (none: not an `openai` model, nothing to hold for). */
  const upstreamNames = (id: string): readonly string[] => {
    const config = deps.models.get(id)?.config;
    return config?.provider === 'openai' ? upstreamsOf(config).map((upstream) => upstream.name) : [];
  };

  /**
   * Work is held, not burnt (contract 19): after a failure that is the upstream's, while no upstream of the model nor
   * of any of its fallbacks is in service (as this process's book has it), its attempt is given back unspent by the
   * failure (the request waits for one to be back, its deadline, TTL or batch window).
   */
  const holds = (model: Model, outcome: CallOutcome): boolean => {
    const book = deps.health;
    if (book === undefined || outcome.ok || outcome.upstreams !== true || outcome.streamed === true) return false;
    const now = clock.now();
    const config = model.config;
    const fallbacks = config.provider === 'openai' ? (config.fallbacks ?? []) : [];
    return [config.id, ...fallbacks].every((id) => book.noneInService(id, upstreamNames(id), now));
  };

  /**
   * Calls the model; while a call fails in a way that is its upstream's before anything of it was streamed, moves the
   * attempt to another upstream (decided in the store's write: failOver.ts) and calls that one. `settled`: the write
   * that found no upstream left recorded the failure itself.
   */
  const callWithFailover = async (
    held: Held,
    model: Model,
    input: ModelInput,
    first: string | undefined,
  ): Promise<{ outcome: CallOutcome; settled?: Recorded; held?: boolean; released?: boolean }> => {
    const places = deps.upstreams?.[model.config.id];
    let upstream = first;
    let outcome = await deps.caller.call(held.reqId, model, input, upstream);
    learn(model, upstream ?? soleUpstream(model), outcome);
    /** Each upstream call counted once, on the upstream it went to (a model of one upstream is not placed: its one). */
    const counted = (how: UpstreamCallOutcome = upstreamOutcome(outcome)) => {
      const on = upstream ?? soleUpstream(model);
      if (on !== undefined) deps.metrics?.upstreamCalled(model.config.id, on, how);
    };
    const tried: string[] = [];
    while (
      !outcome.ok &&
      outcome.upstreams === true &&
      outcome.streamed !== true &&
      upstream !== undefined &&
      places !== undefined &&
      places.length > 1 &&
      !deps.caller.stopped()
    ) {
      tried.push(upstream);
      const hold = holds(model, outcome);
      const ask = {
        model: model.config.id,
        from: upstream,
        tried,
        upstreams: places,
        reason: outcome.reason,
        health: deps.health?.view(clock.now()),
        ...(hold ? { hold } : {}),
      };
      const moved = await deps.queue
        .failOver(held, { ...ask, policy: deps.policy, said: outcome.said }, clock.now())
        .catch(() => undefined);
      // The write failed: the failure is recorded as any other (below).
      if (moved === undefined || typeof moved !== 'object') {
        counted();
        return moved === undefined ? { outcome } : { outcome, settled: moved };
      }
      if ('released' in moved) {
        counted();
        return { outcome, released: true };
      }
      counted('failed_over');
      log.warn(
        { reqId: held.reqId, from: upstream, to: moved.moved, reason: outcome.reason },
        'attempt moved to another upstream',
      );
      upstream = moved.moved;
      outcome = await deps.caller.call(held.reqId, model, input, upstream);
      learn(model, upstream, outcome);
    }
    counted();
    // Not moved (one upstream, or the write failed): held when nothing is in service.
    return holds(model, outcome) ? { outcome, held: true } : { outcome };
  };

  return async (attempt: Attempt, known: ModelInput | undefined): Promise<void> => {
    const { reqId } = attempt;
    let outcome: CallOutcome;
    let settled: Recorded | undefined;
    let heldBack = false;
    let released = false;
    let seconds = 0;
    let modelId = attempt.model ?? '';
    try {
      // A submit that started at once hands its input over: nothing to read, and no await for it.
      const given =
        known !== undefined && attempt.model !== undefined
          ? { model: attempt.model, input: known }
          : await inputOf(attempt);
      modelId = given.model ?? modelId;
      const model = deps.models.get(modelId);
      const { input } = given;
      // A line that cannot run says why first (its model may be the one no longer configured).
      if (input !== undefined && 'reason' in input) outcome = { ok: false, ...input };
      else if (model === undefined) outcome = { ok: false, reason: 'model is no longer configured' };
      else if (input === undefined) outcome = { ok: false, reason: 'prompt is missing' };
      else if (deps.cancelledEarly(reqId)) outcome = { ok: false, reason: 'cancelled' };
      else if (deps.leaseLapsing(reqId)) outcome = { ok: false, reason: 'lease lapsing' };
      else {
        deps.metrics?.attemptStarted(modelId);
        const calledAt = performance.now();
        const called = await callWithFailover(
          { reqId, attempt: attempt.attempt, owner },
          model,
          input,
          attempt.upstream,
        );
        outcome = called.outcome;
        settled = called.settled;
        heldBack = called.held === true;
        released = called.released === true;
        seconds = (performance.now() - calledAt) / 1000;
      }
    } finally {
      deps.workerFree();
    }
    // Stopping: record nothing; the attempt is given back (or its lease lapses) and another worker takes it up.
    if (deps.caller.stopped()) return;
    const held: Held = { reqId, attempt: attempt.attempt, owner };
    if (!outcome.ok && deps.leaseGivenUp(reqId)) {
      // Not the request's failure: this process could not keep its lease (its writes too slow). Given back, for any
      // worker to take up; if another already did, the release is refused and changes nothing.
      log.warn({ reqId }, 'attempt given back: its lease could not be kept');
      deps.metrics?.attemptEnded(modelId, 'taken_over', seconds);
      await deps.queue.release(held, clock.now()).catch(() => {});
      return;
    }
    if (heldBack || released) {
      // Back in the queue, its failure not recorded: no upstream in service (it waits for the dispatcher's timer at a
      // cool-down's end), or none with a free place (it waits for one).
      log.warn(
        { reqId, reason: outcome.ok ? '' : outcome.reason },
        heldBack ? 'attempt held: no upstream of its model is in service' : 'attempt given back: no upstream had room',
      );
      deps.metrics?.attemptEnded(modelId, 'failed', seconds);
      if (!released) await deps.queue.release(held, clock.now()).catch(() => {});
      return;
    }
    const result =
      settled ??
      (await recordUntilWritten(held, (now) =>
        outcome.ok
          ? deps.queue.recordSuccess(held, answerOf(outcome.generation), now)
          : deps.queue.recordFailure(held, outcome.reason, deps.policy, now, outcome),
      ));
    if (result === undefined) return;
    if (result === 'recorded') {
      deps.metrics?.attemptEnded(
        modelId,
        outcomeLabel(outcome),
        seconds,
        outcome.ok ? outcome.generation.usage : undefined,
      );
      if (!outcome.ok) log.warn({ reqId, reason: outcome.reason }, 'attempt failed');
      return;
    }
    const why = await refusedBecause(reqId);
    deps.metrics?.attemptEnded(modelId, why === 'taken over' ? 'taken_over' : why, seconds);
    if (why === 'cancelled') log.info({ reqId }, 'result dropped: the request was cancelled');
    else if (why === 'taken over') log.info({ reqId }, 'result dropped: another worker took the request over');
    else {
      log.info({ reqId }, 'result dropped: the request expired before its model answered');
      // Expired now rather than by the sweeper: it would otherwise stay "processing" with nobody working on it.
      await committer.send({ type: 'Expire', reqId, now: clock.now() });
    }
  };
};

/** A write that failed because of the disk is said once by StorageHealth; anything else is a fault. */
export const logAttemptFault = (log: Logger, reqId: string, error: unknown) => {
  if (error instanceof StorageFault) log.warn({ reqId, reason: error.message }, 'processing paused: write failed');
  else log.error({ reqId, err: error }, 'processing fault');
};
