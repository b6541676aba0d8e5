import { Context, Effect, Layer, Option } from 'effect';
import type { Logger } from 'pino';
import { type Command, isRefusal, type Refusal } from '../domain/commands.js';
import type { Unavailable } from '../domain/errors.js';
import { defaultRetryPolicy, type RetryPolicy } from '../domain/request/retryPolicy.js';
import { AppClock, type ClockShape } from '../ports/Clock.js';
import { Log } from '../ports/Logger.js';
import type { Generation } from '../ports/ModelProvider.js';
import { type CommandOutcome, StorageFault, Store, type StoreShape } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { Committer, type CommitterShape } from './Committer.js';
import { pickFairly } from './dispatchPolicy.js';
import { LiveOutput, type LiveOutputShape } from './LiveOutput.js';
import { Metrics, type MetricsShape } from './Metrics.js';
import { type Model, Models, type ModelsShape } from './Models.js';
import { type ModelInput, modelInputOf, storedAnswerOf } from './storedInput.js';

export interface ProcessorShape {
  /** Tells the pool there may be new work in the queue (for example after a restart). Cheap; coalesced. */
  wake(): void;
  /**
   * Before a submit: may the new request start at once? Yes when a worker is free for its model and nothing waits
   * in the queue before it (which would be served first). A yes holds a worker until `started` or `release`; a no
   * means the request joins the queue, and the caller says `enqueued` once its submit is settled.
   */
  claim(reqId: string, model: string): boolean;
  /** The submit committed with its first attempt started: call the model now, with its input in hand. */
  started(reqId: string, model: string, input: ModelInput): void;
  /** The request was cancelled (durably): a model call in flight for it is aborted; its waiters are told. */
  cancelled(reqId: string): void;
  /** Resolves when an outcome of the request is durable (completed, failed for good, cancelled, dropped), after
   * `timeoutMs`, or when `signal` aborts, whichever comes first. Only a hint to look again: the caller reads the
   * request's state. */
  outcome(reqId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** A claim that was not used (the submit failed, or was committed without a start). */
  release(reqId: string, model: string): void;
  /** A submit that was refused a claim is settled (committed or failed): look at the queue. */
  enqueued(): void;
  /** Requests being worked on right now (from their pick or claim until their outcome is durable). */
  inFlight(): number;
  /** Resolves when no work is in flight and none is available now (for tests and graceful shutdown). */
  idle(): Promise<void>;
  /** Takes no new work from now on (a stopping server lets the calls in flight finish, and starts nothing more). */
  stopTakingWork(): void;
}

export class Processor extends Context.Service<Processor, ProcessorShape>()('airs/Processor') {}

type Deps = {
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly models: ModelsShape;
  readonly clock: ClockShape;
  readonly log: Logger;
  readonly concurrency: number;
  readonly policy: RetryPolicy;
  /** Counts attempts, their outcomes and durations by model. */
  readonly metrics?: Pick<MetricsShape, 'attemptStarted' | 'attemptEnded'> | undefined;
  /** Where the text of attempts goes to callers streaming them (none: nobody streams). */
  readonly live?: LiveOutputShape | undefined;
};

type Outcome = { ok: true; generation: Generation } | { ok: false; reason: string };

/**
 * The worker pool. A request is started in one of two ways, both recorded before the model is called, so the model
 * is called at most once per recorded attempt:
 * - at once, with its submit (`claim` then `started`): when a worker is free and nothing waits in the queue, the
 *   submit and the first attempt's start are one command in one durable write, and the worker gets the prompt
 *   from the caller;
 * - from the queue (the dispatch index in LMDB), accounts in turn (pickFairly): the starts of everything picked in
 *   one go are one batch for the committer, and each model is called once its start is on disk.
 * `concurrency` and each model's `maxConcurrency` count workers held: from the claim or pick until the model has
 * answered. A request stays out of further picks until its outcome is durable. Outcomes go to the committer as they
 * arrive. What the pool holds in memory is bounded by `concurrency`: the queue itself lives on disk, so a restart
 * simply continues from it, including requests that were being processed when the process died.
 */
/** How long the pool waits before it looks again after a write failed (the disk may be full for a while). */
const faultRetryMs = 1_000;
/** How often calls in flight are checked for a cancel made by another process. */
const otherCancelCheckMs = 1_000;

export const createProcessor = (deps: Deps) => {
  const { store, committer, models, clock, log } = deps;
  /** Requests worked on: from their claim or pick until their outcome is durable (or the claim is released). */
  const working = new Map<string, Promise<void> | undefined>();
  /** Workers held, in all and per model: from the claim or pick until the model has answered. */
  let held = 0;
  const heldPerModel = new Map<string, number>();
  const modelLimit = (id: string) => models.get(id)?.config.maxConcurrency ?? Number.POSITIVE_INFINITY;
  /** The queue may hold requests that wait (true until a pick finds nothing waiting). */
  let backlog = true;
  /** Submits refused a claim and not settled yet: they are about to join the queue. */
  let joining = 0;
  /**
   * The log may say requests are being processed that no worker here has: after a start (the process died
   * mid-attempt) or a failed write. Looked for when that may be the case, not on every pump.
   */
  let orphansPossible = true;
  let lastAccount: string | undefined;
  const shutdown = new AbortController();
  /** Per request, the controller of its model call in flight, for calls worth aborting (not an instant echo). */
  const cancellers = new Map<string, AbortController>();
  /** Requests cancelled while their attempt was being recorded, before their model call began: it never begins. */
  const cancelledEarly = new Set<string>();
  /** Callers waiting for a request's outcome (a waiting `POST /v1/responses`). */
  const outcomeWaiters = new Map<string, Set<() => void>>();
  const tellOutcome = (reqId: string) => {
    const waiters = outcomeWaiters.get(reqId);
    if (waiters === undefined) return;
    outcomeWaiters.delete(reqId);
    for (const resolve of waiters) resolve();
  };
  /** Controllers of the model calls in flight, aborted together when the pool stops. */
  const calls = new Set<AbortController>();
  let pumpScheduled = false;
  /** Set when the server starts to stop: calls in flight finish and record their outcome, nothing new starts. */
  let stoppedTaking = false;
  const takesNoWork = () => stoppedTaking || shutdown.signal.aborted;
  let timer: NodeJS.Timeout | undefined;
  let idleWaiters: Array<() => void> = [];

  const hold = (model: string) => {
    held++;
    heldPerModel.set(model, (heldPerModel.get(model) ?? 0) + 1);
  };
  const letGo = (model: string) => {
    held--;
    heldPerModel.set(model, (heldPerModel.get(model) ?? 1) - 1);
    schedule();
  };

  const send = async (command: Command): Promise<Refusal | undefined> => {
    const outcome = await committer.send(command);
    return isRefusal(outcome) ? outcome : undefined;
  };

  /**
   * Calls started in the same event-loop turn for the same model share one AbortController and one timer: their
   * timeouts would fire at the same moment anyway, and a controller with its signal costs more than an echo call.
   * A group is closed at the end of its turn and dropped once its last call has ended.
   */
  type CallGroup = {
    readonly controller: AbortController;
    readonly timer: NodeJS.Timeout;
    running: number;
    open: boolean;
  };
  const openGroups = new Map<string, CallGroup>();
  const finishGroup = (group: CallGroup) => {
    clearTimeout(group.timer);
    calls.delete(group.controller);
  };
  const closeGroups = () => {
    for (const group of openGroups.values()) {
      group.open = false;
      if (group.running === 0) finishGroup(group);
    }
    openGroups.clear();
  };
  const joinGroup = (model: Model): CallGroup => {
    let group = openGroups.get(model.config.id);
    if (group === undefined) {
      const controller = new AbortController();
      group = {
        controller,
        timer: setTimeout(() => controller.abort(), model.config.timeoutMs),
        running: 0,
        open: true,
      };
      calls.add(controller);
      // A call that begins after the pool was told to stop is aborted at once, like the ones already running.
      if (shutdown.signal.aborted) controller.abort();
      if (openGroups.size === 0) setImmediate(closeGroups);
      openGroups.set(model.config.id, group);
    }
    group.running++;
    return group;
  };
  const leaveGroup = (group: CallGroup) => {
    group.running--;
    if (group.running === 0 && !group.open) finishGroup(group);
  };

  /** Whether a call to this model takes long enough that cancelling it is worth its own AbortController. */
  const abortable = (model: Model) => model.config.provider !== 'echo' || model.config.delayMs > 0;

  const callModel = async (reqId: string, modelId: string, known: ModelInput | undefined): Promise<Outcome> => {
    // A request being processed holds its prompt (or its conversation) in its record.
    const input = known ?? storedInputOf(reqId);
    const model = models.get(modelId);
    if (input === undefined || model === undefined) {
      return { ok: false, reason: model === undefined ? 'model is no longer configured' : 'prompt is missing' };
    }
    if (cancelledEarly.size > 0 && cancelledEarly.has(reqId)) return { ok: false, reason: 'cancelled' };
    const group = joinGroup(model);
    let signal = group.controller.signal;
    const own = abortable(model) ? new AbortController() : undefined;
    if (own !== undefined) {
      cancellers.set(reqId, own);
      signal = AbortSignal.any([signal, own.signal]);
      watchForOtherCancels();
    }
    // Callers streaming the request hear the attempt's text as the model writes it (the model streams only then).
    const live = deps.live?.listened(reqId) === true ? deps.live.begin(reqId) : undefined;
    let answered = false;
    try {
      // Raced against the signal: a provider that ignores it (a stuck upstream) must not hold the worker past the
      // attempt's timeout, or the request would stay processing with nobody to end it.
      const generation = await settledBy(model.provider.generate({ ...input, signal, onDelta: live?.delta }), signal);
      answered = true;
      return { ok: true, generation };
    } catch (error) {
      if (own?.signal.aborted) return { ok: false, reason: 'cancelled' };
      const timedOut = signal.aborted && !shutdown.signal.aborted;
      return { ok: false, reason: timedOut ? `timed out after ${model.config.timeoutMs} ms` : describe(error) };
    } finally {
      live?.end(answered);
      if (own !== undefined) cancellers.delete(reqId);
      leaveGroup(group);
    }
  };

  /**
   * A cancel made by another process (`airs requests cancel`) reaches this one only through the log: while calls
   * worth aborting run, their requests are looked at once a second, and a cancelled one's call is aborted.
   */
  let cancelWatch: NodeJS.Timeout | undefined;
  const watchForOtherCancels = () => {
    if (cancelWatch !== undefined) return;
    cancelWatch = setInterval(() => {
      if (cancellers.size === 0) {
        clearInterval(cancelWatch);
        cancelWatch = undefined;
        return;
      }
      store.reads.refresh();
      for (const [reqId, canceller] of cancellers)
        if (store.reads.request(reqId)?.status === 'cancelled') canceller.abort();
    }, otherCancelCheckMs);
    cancelWatch.unref();
  };

  /** The prompt (and conversation) of a request being processed, from its record. */
  const storedInputOf = (reqId: string): ModelInput | undefined => {
    const stored = store.reads.requestWithText(reqId);
    if (stored?.text === undefined) return undefined;
    return modelInputOf(stored.text, stored.state.context.input);
  };

  /** Whether the request was cancelled (read afresh: the cancel may have come from another process). */
  const isCancelled = (reqId: string) => {
    store.reads.refresh();
    return store.reads.request(reqId)?.status === 'cancelled';
  };

  /** One attempt from its recorded start: `started` settles when the start is durable (or refused). */
  const attempt = async (
    reqId: string,
    modelId: string,
    started: Promise<CommandOutcome | Unavailable> | undefined,
    prompt: ModelInput | undefined,
  ): Promise<void> => {
    let outcome: Outcome;
    let seconds = 0;
    try {
      if (started !== undefined && isRefusal(await started)) {
        // Cancelled between its pick and its start: nothing to do.
        if (isCancelled(reqId)) return;
        // Past its expiry a request is never processed: expire it now rather than wait for the sweeper.
        const refused = await send({ type: 'Expire', reqId, now: clock.now() });
        if (refused !== undefined) log.error({ reqId, reason: refused.message }, 'queued request could not be started');
        return;
      }
      deps.metrics?.attemptStarted(modelId);
      const calledAt = performance.now();
      outcome = await callModel(reqId, modelId, prompt);
      seconds = (performance.now() - calledAt) / 1000;
    } finally {
      letGo(modelId);
    }
    // Stopping: leave the request as it is; the next start picks it up again.
    if (shutdown.signal.aborted) return;
    const now = clock.now();
    const refused = await send(
      outcome.ok
        ? successOf(reqId, outcome.generation, now)
        : { type: 'RecordFailure', reqId, reason: outcome.reason, policy: deps.policy, now },
    );
    const dropped = refused !== undefined && isCancelled(reqId);
    deps.metrics?.attemptEnded(
      modelId,
      dropped
        ? 'cancelled'
        : refused !== undefined
          ? 'expired'
          : outcome.ok
            ? 'completed'
            : outcome.reason.startsWith('timed out')
              ? 'timed_out'
              : 'failed',
      seconds,
      refused === undefined && outcome.ok ? outcome.generation.usage : undefined,
    );
    if (dropped) {
      log.info({ reqId }, 'result dropped: the request was cancelled');
    } else if (refused !== undefined) {
      // The machine refuses an outcome only past the request's expiry: a normal race between a slow model and the
      // request's lifetime, not a fault. Expire it now rather than wait for the sweeper (it would otherwise stay
      // "processing" with nobody working on it).
      log.info({ reqId }, 'result dropped: the request expired before its model answered');
      const notExpired = await send({ type: 'Expire', reqId, now: clock.now() });
      if (notExpired !== undefined) orphansPossible = true;
    } else if (!outcome.ok) {
      log.warn({ reqId, reason: outcome.reason }, 'attempt failed');
      // A retry waits in the queue.
      backlog = true;
    }
  };

  const run = (
    reqId: string,
    model: string,
    started: Promise<CommandOutcome | Unavailable> | undefined,
    prompt?: ModelInput,
  ) => {
    const work = attempt(reqId, model, started, prompt)
      .catch((error: unknown) => {
        // A write failed: the request is still waiting or still processing, where a later pump finds it. Nothing
        // else may wake the pool (a full disk refuses new submits), so it looks again in a moment by itself.
        backlog = true;
        orphansPossible = true;
        if (error instanceof StorageFault)
          log.warn({ reqId, reason: error.message }, 'processing paused: write failed');
        else log.error({ reqId, err: error }, 'processing fault');
        wakeAfterFault();
      })
      .finally(() => {
        working.delete(reqId);
        cancelledEarly.delete(reqId);
        tellOutcome(reqId);
        // The outcome is durable now (a retry waits in the queue with its `retryAt`): look at the queue again, so
        // that the next pick sees it and sets the timer for when it is due. A pick made before this point, when the
        // worker was let go, still saw the request as being worked on.
        schedule();
        settleIdle();
      });
    working.set(reqId, work);
  };

  /** Starts again the requests being processed that nobody works on; returns how many it started. */
  const takeOrphans = (free: number, now: number): number => {
    store.reads.refresh();
    let taken = 0;
    let leftBehind = false;
    for (const reqId of store.reads.processing()) {
      if (working.has(reqId)) continue;
      const model = store.reads.request(reqId)?.context.model;
      if (model === undefined) continue;
      if (taken >= free || (heldPerModel.get(model) ?? 0) >= modelLimit(model)) {
        leftBehind = true;
        continue;
      }
      hold(model);
      taken++;
      run(reqId, model, committer.send({ type: 'StartAttempt', reqId, now }));
    }
    orphansPossible = leftBehind;
    return taken;
  };

  const pump = () => {
    pumpScheduled = false;
    if (takesNoWork()) return;
    const now = clock.now();
    let free = deps.concurrency - held;
    // Requests whose attempt was cut short come first: they were started before anything in the queue.
    if (free > 0 && orphansPossible) free -= takeOrphans(free, now);
    if (free > 0 && (backlog || joining > 0)) {
      const pick = pickFairly(
        store.reads,
        { lastAccount, running: new Set(working.keys()), runningPerModel: heldPerModel },
        { free, modelLimit },
        now,
      );
      lastAccount = pick.lastAccount;
      // Claims may go to new submits again once nothing waits in the queue.
      if (pick.exhausted && joining === 0) backlog = false;
      // Sent in one turn, the starts of this pick share one batch: one durable write for all of them.
      for (const { reqId, model } of pick.picked) {
        hold(model);
        run(reqId, model, committer.send({ type: 'StartAttempt', reqId, now }));
      }
      // Requests waiting out a retry backoff become available later: one timer for the earliest of them.
      if (pick.picked.length === 0) scheduleWake(pick.nextAvailableAt, now);
    }
    settleIdle();
  };

  const settleIdle = () => {
    if (working.size === 0 && !pumpScheduled) for (const resolve of idleWaiters.splice(0)) resolve();
  };

  const scheduleWake = (at: number | undefined, now: number) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = at === undefined ? undefined : setTimeout(schedule, Math.max(0, at - now) + 1);
    timer?.unref();
  };

  const schedule = () => {
    if (pumpScheduled || takesNoWork()) return;
    pumpScheduled = true;
    setImmediate(pump);
  };

  const wake = () => {
    backlog = true;
    orphansPossible = true;
    schedule();
  };

  let faultTimer: NodeJS.Timeout | undefined;
  const wakeAfterFault = () => {
    if (faultTimer !== undefined || takesNoWork()) return;
    faultTimer = setTimeout(() => {
      faultTimer = undefined;
      wake();
    }, faultRetryMs);
    faultTimer.unref();
  };

  const claim = (reqId: string, model: string): boolean => {
    const free = !takesNoWork() && held < deps.concurrency && (heldPerModel.get(model) ?? 0) < modelLimit(model);
    if (!free || backlog || joining > 0) {
      joining++;
      return false;
    }
    hold(model);
    working.set(reqId, undefined);
    return true;
  };

  const release = (reqId: string, model: string) => {
    if (!working.has(reqId)) return;
    working.delete(reqId);
    cancelledEarly.delete(reqId);
    // The submit may have been committed without its start: then it waits in the queue.
    backlog = true;
    letGo(model);
    settleIdle();
  };

  const started = (reqId: string, model: string, input: ModelInput) => {
    if (!working.has(reqId)) return;
    run(reqId, model, undefined, input);
  };

  const cancelled = (reqId: string) => {
    const canceller = cancellers.get(reqId);
    if (canceller !== undefined) canceller.abort();
    else if (working.has(reqId)) cancelledEarly.add(reqId);
    tellOutcome(reqId);
  };

  const outcome = (reqId: string, timeoutMs: number, signal?: AbortSignal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted === true) return resolve();
      let waiters = outcomeWaiters.get(reqId);
      if (waiters === undefined) {
        waiters = new Set();
        outcomeWaiters.set(reqId, waiters);
      }
      let timer: NodeJS.Timeout | undefined;
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        waiters.delete(done);
        if (waiters.size === 0 && outcomeWaiters.get(reqId) === waiters) outcomeWaiters.delete(reqId);
        resolve();
      };
      timer = setTimeout(done, Math.max(0, timeoutMs));
      signal?.addEventListener('abort', done, { once: true });
      waiters.add(done);
    });

  const enqueued = () => {
    joining--;
    wake();
  };

  const idle = () =>
    new Promise<void>((resolve) => {
      idleWaiters.push(resolve);
      wake();
      // Taking no work, the pool schedules no pump that would settle it.
      settleIdle();
    });

  const stop = async () => {
    shutdown.abort();
    for (const call of calls) call.abort();
    if (timer !== undefined) clearTimeout(timer);
    if (faultTimer !== undefined) clearTimeout(faultTimer);
    if (cancelWatch !== undefined) clearInterval(cancelWatch);
    await Promise.allSettled([...working.values()]);
    for (const resolve of idleWaiters.splice(0)) resolve();
    idleWaiters = [];
  };

  const stopTakingWork = () => {
    stoppedTaking = true;
  };

  return {
    wake,
    claim,
    started,
    release,
    enqueued,
    idle,
    stop,
    stopTakingWork,
    cancelled,
    outcome,
    inFlight: () => working.size,
  };
};

/** A model's answer as the command that records it: the stored answer, its usage and how it ended. */
const successOf = (reqId: string, generation: Generation, now: number): Command => {
  const answer = storedAnswerOf(generation);
  return {
    type: 'RecordSuccess',
    reqId,
    responseChars: answer.text.length,
    response: answer.text,
    inputTokens: generation.usage?.inputTokens,
    outputTokens: generation.usage?.outputTokens,
    finishReason: generation.finishReason === 'stop' ? undefined : generation.finishReason,
    output: answer.output,
    now,
  };
};

/** `work`'s answer, or a rejection as soon as `signal` aborts, whichever comes first. */
const settledBy = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) {
    // Whatever it ends with is of no interest any more.
    work.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
};

const describe = (error: unknown): string => (error instanceof Error ? error.message : String(error)).slice(0, 500);

/** The pool as a layer: started when built (picking up whatever the log left queued), stopped with its scope. */
export const ProcessorLayer = Layer.effect(
  Processor,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const deps: Deps = {
      store: yield* Store,
      committer: yield* Committer,
      models: yield* Models,
      clock: yield* AppClock,
      log: yield* Log,
      concurrency: config.processing.concurrency,
      policy: { ...defaultRetryPolicy, maxAttempts: config.processing.maxAttempts },
      metrics: Option.getOrUndefined(yield* Effect.serviceOption(Metrics)),
      live: Option.getOrUndefined(yield* Effect.serviceOption(LiveOutput)),
    };
    const processor = yield* Effect.acquireRelease(
      Effect.sync(() => createProcessor(deps)),
      (p) => Effect.promise(() => p.stop()),
    );
    // Whatever the log left queued or being processed is picked up now.
    processor.wake();
    const { wake, claim, started, release, enqueued, inFlight, idle, stopTakingWork, cancelled, outcome } = processor;
    return Processor.of({
      wake,
      claim,
      started,
      release,
      enqueued,
      inFlight,
      idle,
      stopTakingWork,
      cancelled,
      outcome,
    });
  }),
);
