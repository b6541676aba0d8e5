import { randomBytes } from 'node:crypto';
import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import type { Logger } from 'pino';
import { upstreamsOf } from '../../config.js';
import type { Fallbacks } from '../../domain/claim.js';
import type { Unavailable } from '../../domain/errors.js';
import { maxProcessingByPlan } from '../../domain/plans.js';
import { defaultRetryPolicy, type RetryPolicy } from '../../domain/request/retryPolicy.js';
import type { UpstreamPlace } from '../../domain/upstreamChoice.js';
import type { HealthView } from '../../domain/upstreamHealth.js';
import { AppClock, type ClockShape } from '../../ports/Clock.js';
import { Log } from '../../ports/Logger.js';
import { Store, type StoreShape } from '../../ports/Store.js';
import { workQueueOver } from '../../storage/workQueue.js';
import { AppConfig } from '../AppConfig.js';
import { Committer, type CommitterShape } from '../Committer.js';
import { LiveOutput, type LiveOutputShape } from '../LiveOutput.js';
import { Metrics, type MetricsShape } from '../Metrics.js';
import { Models, type ModelsShape } from '../Models.js';
import type { ModelInput } from '../storedInput.js';
import { createAdmission } from './admission.js';
import { type Attempt, createAttemptRunner, logAttemptFault } from './attempts.js';
import { createDispatcher } from './dispatcher.js';
import { createLeaseKeeper } from './leaseKeeper.js';
import { type LineInputs, LineReader } from './lineReader.js';
import { createModelCaller } from './modelCall.js';
import { createSlots } from './slots.js';
import { createUpstreamHealthBook } from './upstreamHealthBook.js';
import { createWaiters } from './waiters.js';
import { summaryOf } from './wakeups.js';

/** What a submit may start under when a worker of this process is free for it (the store decides whether it does). */
export type StartNow = {
  readonly owner: string;
  readonly leaseMs: number;
  readonly modelLimit?: number | undefined;
  /** The model's upstreams (the submit's write chooses one with a free place). */
  readonly upstreams?: readonly UpstreamPlace[] | undefined;
  /** This process's upstream health (those not in service): the submit starts only on one in service. */
  readonly health?: HealthView | undefined;
};

export interface ProcessorShape {
  /** There may be work to take (a restart, a change by another process). Cheap; coalesced. */
  wake(): void;
  /**
   * Before a submit: a worker of this process, held for the new request, and the lease its submit may start it
   * under; undefined when none is free (then the request only queues). Say how it went with `submitted`.
   */
  reserve(model: string): StartNow | undefined;
  /** When `reserve` found no worker: undefined when a submit that must wait in the queue is taken now (say how its
   * write went with `submitted`), else the `503` to answer (admission.ts). */
  admission(): Unavailable | undefined;
  /** The refusal a submit would get now whatever its model (no worker free, the backlog full), taking nothing: lets
   * the HTTP face answer `503` before it spends the caller's rate limit and reads the body. */
  refusesNow(): Unavailable | undefined;
  /**
   * The submit was written (or failed: `started` undefined). Started: its first attempt is durable, the worker held
   * for it calls the model now with the input in hand. Otherwise the held worker (if `reserved`) is let go, and the
   * queue is looked at, as the request now waits in it. `queued`: the submit was written and its request waits in
   * the queue (for admission's count).
   */
  submitted(
    reqId: string,
    model: string,
    reserved: boolean,
    started:
      | {
          readonly attempt: number;
          readonly leaseUntil?: number | undefined;
          readonly input: ModelInput;
          readonly upstream?: string | undefined;
        }
      | undefined,
    queued?: boolean,
  ): void;
  /** The request was cancelled (durably): a model call in flight for it is aborted; its waiters are told. */
  cancelled(reqId: string): void;
  /** Resolves when an outcome of the request is durable here, after `timeoutMs`, or when `signal` aborts. Only a hint
   * to look again: the caller reads the request's state. */
  outcome(reqId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Attempts this process runs right now (from their durable start until their outcome is durable). */
  inFlight(): number;
  /** Resolves when this process runs nothing and nothing is due now (for tests and graceful shutdown). */
  idle(): Promise<void>;
  /** Takes no new work from now on (a stopping server lets the calls in flight finish, and starts nothing more). */
  stopTakingWork(): void;
}

export class Processor extends Context.Service<Processor, ProcessorShape>()('airs/Processor') {}

export type ProcessorDeps = {
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly models: ModelsShape;
  readonly clock: ClockShape;
  readonly log: Logger;
  readonly concurrency: number;
  readonly policy: RetryPolicy;
  /** How long a start holds the request for this process unless renewed (renewed every third of it). */
  readonly leaseMs: number;
  /** This process's name on the leases it takes (new at every start). */
  readonly owner?: string;
  /** Each plan's bound of an account's requests being processed at once, in all processes (maxProcessingByPlan). */
  readonly maxProcessing?:
    | Readonly<Record<string, number | null>>
    | (() => Readonly<Record<string, number | null>>)
    | undefined;
  /** The most of a model's workers one account holds while another account has work of that model due. */
  readonly accountShare?: number | undefined;
  /** The share of a model's workers batches' lines always get (`batches.minShare`). */
  readonly batchShare?: number | undefined;
  /** How long a `default` request waits before it is started as `priority` would be (absent: never). */
  readonly promoteAfterMs?: number | undefined;
  /** Submits queued and not yet taken by this process's workers beyond which a submit that must queue answers `503`
   * (`processing.maxBacklog`; admission.ts). None: no bound. */
  readonly maxBacklog?: number | undefined;
  readonly metrics?:
    | Pick<MetricsShape, 'attemptStarted' | 'attemptEnded' | 'upstreamCalled' | 'queueWaited'>
    | undefined;
  readonly live?: LiveOutputShape | undefined;
  /** Batches' lines, read from their input files when their attempts start (batches/lineInput.ts). */
  readonly lineInputs?: LineInputs | undefined;
};

/** Each model's upstreams as the claim weighs them, for models of two or more (with one there is nothing to choose:
 * the model's own bound is its places, and its events stay as before). Places only where bounded: the claim travels
 * as JSON, which has no Infinity. */
export const upstreamPlacesOf = (models: ModelsShape): Record<string, readonly UpstreamPlace[]> => {
  const places: Record<string, readonly UpstreamPlace[]> = {};
  for (const id of models.ids()) {
    const config = models.get(id)?.config;
    if (config?.provider !== 'openai' || upstreamsOf(config).length < 2) continue;
    places[id] = upstreamsOf(config).map(({ name, places: bound, weight }) =>
      Number.isFinite(bound) ? { name, places: bound, weight } : { name, weight },
    );
  }
  return places;
};

/** Each model's fallbacks as the claim takes them (contract 19; a model without is absent). */
export const fallbacksOf = (models: ModelsShape): Record<string, Fallbacks> => {
  const fallbacks: Record<string, Fallbacks> = {};
  for (const id of models.ids()) {
    const config = models.get(id)?.config;
    if (config?.provider !== 'openai' || config.fallbacks === undefined) continue;
    fallbacks[id] =
      config.spillAfterSeconds === undefined
        ? { models: config.fallbacks }
        : { models: config.fallbacks, spillAfterMs: config.spillAfterSeconds * 1000 };
  }
  return fallbacks;
};

/** A name for this process's leases: new at every start, so a restarted process takes nothing for its own. */
export const newOwner = () => `proc_${randomBytes(9).toString('base64url')}`;

/**
 * The worker pool, in small parts: `slots` (this process's workers), the `dispatcher` (when to take work, and taking
 * it with a `Claim` decided inside the store's write), the `caller` (model calls with timeout and abort), the attempt
 * `runner` (from a durable start to a durable outcome, fenced by the lease), the `leaseKeeper` (renewals), and
 * `waiters` (callers waiting for an outcome). A model is called only after its attempt's start is on disk, and at
 * most once per recorded attempt. Nothing about the queue lives here: a restart, or another process, continues from
 * the store (leases lapse, and lapsed leases are taken over).
 */
export const createProcessor = (deps: ProcessorDeps) => {
  const { store, committer, clock, log } = deps;
  // Every move goes through the committer, whose outcomes tell the dispatcher what may have become due.
  const queue = workQueueOver((command) => committer.send(command));
  const owner = deps.owner ?? newOwner();
  const slots = createSlots(deps.concurrency);
  const admission = createAdmission(deps.maxBacklog ?? Number.POSITIVE_INFINITY);
  const waiters = createWaiters();
  const caller = createModelCaller(deps.live);
  // Upstream health as this process learns it from its calls (docs/decisions.md: "health kept by each process").
  const health = createUpstreamHealthBook({
    log,
    threshold: (model) => {
      const config = deps.models.get(model)?.config;
      return (config?.provider === 'openai' ? config.upstreamFailures : undefined) ?? 3;
    },
  });
  // Each model's bound, upstreams and fallbacks, read from the models again after a reload (which adds, removes and
  // changes them, and makes a new list of ids): kept until then, since every claim reads them.
  let seenIds: readonly string[] | undefined;
  let bounds = {
    modelLimits: {} as Record<string, number>,
    upstreams: {} as Record<string, readonly UpstreamPlace[]>,
    fallbacks: {} as Record<string, Fallbacks>,
  };
  const current = () => {
    const ids = deps.models.ids();
    if (ids === seenIds) return bounds;
    seenIds = ids;
    const modelLimits: Record<string, number> = {};
    for (const id of ids) {
      const limit = deps.models.get(id)?.config.maxConcurrency;
      if (limit !== undefined) modelLimits[id] = limit;
    }
    bounds = { modelLimits, upstreams: upstreamPlacesOf(deps.models), fallbacks: fallbacksOf(deps.models) };
    return bounds;
  };
  /** Attempts this process runs, until their outcome is durable. */
  const working = new Map<string, Attempt & { done: Promise<void> }>();
  /** Requests cancelled while their start was being recorded, before their model call began: it never begins. */
  const cancelledEarly = new Set<string>();
  let stoppedTaking = false;
  let stopped = false;
  const takesNoWork = () => stoppedTaking || stopped;
  let idleWaiters: (() => void)[] = [];

  const leaseKeeper = createLeaseKeeper({
    queue,
    clock,
    owner,
    leaseMs: deps.leaseMs,
    refused: (reqId) => caller.abort(reqId),
    lapsing: (reqId) => caller.abort(reqId),
  });

  const runner = createAttemptRunner({
    store,
    queue,
    committer,
    models: deps.models,
    clock,
    log,
    owner,
    policy: deps.policy,
    caller,
    metrics: deps.metrics,
    cancelledEarly: (reqId) => cancelledEarly.has(reqId),
    leaseLapsing: (reqId) => leaseKeeper.giveUpIfLapsing(reqId),
    leaseGivenUp: (reqId) => leaseKeeper.gaveUp(reqId),
    lineInputs: deps.lineInputs,
    get upstreams() {
      return current().upstreams;
    },
    health,
    workerFree: () => {
      slots.letGo();
      dispatcher.workerFree();
    },
  });

  const settleIdle = async () => {
    if (idleWaiters.length === 0 || working.size > 0) return;
    if (!stopped && !stoppedTaking && (await store.reads.dueWork(clock.now())).now) return;
    if (working.size > 0) return;
    for (const resolve of idleWaiters.splice(0)) resolve();
  };

  /** Runs an attempt whose worker is held and whose start is durable. */
  /** Gives an attempt back, again each second while the write fails, until it is written (or refused: the attempt
   * is no longer this process's) or the processor stops (its lease then lapses for another process). */
  const giveBackUntilWritten = async (attempt: Attempt) => {
    while (!takesNoWork()) {
      try {
        await queue.release({ reqId: attempt.reqId, attempt: attempt.attempt, owner }, clock.now());
        return;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      }
    }
  };

  const run = (attempt: Attempt, known?: ModelInput) => {
    leaseKeeper.hold(attempt.reqId, attempt.attempt, attempt.leaseUntil);
    const done = runner(attempt, known)
      .catch(async (error: unknown) => {
        // A read or write failed (the store cannot be reached): the attempt cannot go on. It is given back, so that
        // any worker takes the request up again, this process's too: a process never takes over its own lapsed
        // leases, so on a single node an attempt left behind would stay "processing" for ever.
        logAttemptFault(log, attempt.reqId, error);
        await giveBackUntilWritten(attempt);
        dispatcher.wakeAfterFault();
      })
      .finally(() => {
        // This process may hold the request again by now, in a later attempt (it gave this one back, then took the
        // request from the queue again): only what is this attempt's goes.
        if (working.get(attempt.reqId)?.attempt === attempt.attempt) {
          working.delete(attempt.reqId);
          cancelledEarly.delete(attempt.reqId);
        }
        leaseKeeper.drop(attempt.reqId, attempt.attempt);
        waiters.tell(attempt.reqId);
        // The outcome is durable now. A retry waits in the queue with its `retryAt` (its outcome, once committed, told
        // the dispatcher that work may be due; the next look sets the timer for it); the worker is free either way.
        dispatcher.workerFree();
        settleIdle();
      });
    working.set(attempt.reqId, { ...attempt, done });
  };

  const dispatcher = createDispatcher({
    store,
    queue,
    clock,
    slots,
    log,
    // Getters: the claim is spread at each look, so it takes the bounds in force then (a reload changes them).
    claim: {
      owner,
      leaseMs: deps.leaseMs,
      get modelLimits() {
        return current().modelLimits;
      },
      policy: deps.policy,
      get maxProcessing() {
        return typeof deps.maxProcessing === 'function' ? deps.maxProcessing() : deps.maxProcessing;
      },
      accountShare: deps.accountShare,
      batchShare: deps.batchShare,
      promoteAfterMs: deps.promoteAfterMs,
      workers: deps.concurrency,
      get upstreams() {
        return current().upstreams;
      },
      get fallbacks() {
        return current().fallbacks;
      },
      get health() {
        return health.view(clock.now());
      },
    },
    // Work held while no upstream is in service starts when a cool-down ends, with nothing else to wake the pool.
    nextWake: health.nextEnd,
    takesNoWork,
    // The model is read with the request's input, once the attempt runs.
    run: (claimed) => run(claimed.servedBy === undefined ? claimed : { ...claimed, model: claimed.servedBy }),
    started: admission.started,
    giveBack: ({ reqId, attempt }) => {
      slots.letGo();
      // Not written (the store is unreachable): the lease lapses, and another process takes the request up then.
      return queue.release({ reqId, attempt, owner }, clock.now()).catch(() => {});
    },
    gaveUp: (reqId) => {
      waiters.tell(reqId);
      settleIdle();
    },
    // A look found nothing due: whoever waits for the pool to be idle may be done waiting. (An attempt's end alone
    // does not tell: a request it gave back is due until a later claim takes it, or expires it.)
    nothingDue: () => {
      admission.nothingDue();
      void settleIdle();
    },
  });

  /**
   * Whatever this process writes that can make work due, or free a model's place (a request queued, failed an
   * attempt, given back, finished, cancelled, expired), has the queue looked at again once it is durable: work due but
   * left for its model's bound waits for exactly such a change, and no timer would find it. With a shared writer, the
   * writer's summary of every commit (this process's own included) tells the same, below: hearing both would look twice.
   */
  const hearOwnCommits = (outcomes: Parameters<Parameters<typeof committer.onCommitted>[0]>[0]) => {
    const { workDue, freed, cancelled } = summaryOf(outcomes);
    if (workDue) dispatcher.schedule();
    // Work left for its model's bound was seen due by the last read, so the look reads the queue again.
    else if (freed) dispatcher.workerFree();
    // A cancel this process wrote without asking for it (the sweeper's, at a deadline) stops a call running here too.
    for (const reqId of cancelled) if (working.has(reqId)) cancelledHere(reqId);
  };
  const stopHearing = store.sharedWriter === undefined ? committer.onCommitted(hearOwnCommits) : () => {};

  /**
   * What another process commits (a submit it queued, a lease it took, a cancel, a request it finished) can make work
   * due here, or end a call running here: the dispatcher looks again, and calls in flight whose request was cancelled
   * meanwhile are aborted.
   */
  const lookAgain = () => {
    dispatcher.schedule();
    for (const reqId of caller.abortable())
      void store.reads.request(reqId).then(
        (state) => state?.status === 'cancelled' && caller.abort(reqId),
        () => {},
      );
  };
  const shared = store.sharedWriter;
  // With a writer shared by several processes, each of its commits comes summarised (once, by the writer): the queue
  // is looked at only when work became due or a place freed, and only the cancelled requests' calls are aborted. A
  // write from outside those processes (an `airs` command) still has everything looked at again.
  const stopHearingOthers =
    shared === undefined
      ? store.reads.onChange(lookAgain)
      : (() => {
          const stopCommits = shared.onCommit(({ workDue, freed, cancelled }) => {
            if (workDue) dispatcher.schedule();
            else if (freed) dispatcher.workerFree();
            // As when this process cancels: its call stops (or never starts), its waiters are told.
            for (const reqId of cancelled) if (working.has(reqId)) cancelledHere(reqId);
          });
          const stopForeign = shared.onForeignChange(lookAgain);
          return () => {
            stopCommits();
            stopForeign();
          };
        })();

  const reserve: ProcessorShape['reserve'] = (model) => {
    if (takesNoWork() || !slots.hold()) return undefined;
    const { modelLimits, upstreams } = current();
    return {
      owner,
      leaseMs: deps.leaseMs,
      modelLimit: modelLimits[model],
      upstreams: upstreams[model],
      health: health.view(clock.now()),
    };
  };

  const submitted: ProcessorShape['submitted'] = (reqId, model, reserved, started, queued = false) => {
    admission.written(!reserved, queued);
    if (started !== undefined && reserved)
      return run(
        { reqId, attempt: started.attempt, leaseUntil: started.leaseUntil, model, upstream: started.upstream },
        started.input,
      );
    if (reserved) slots.letGo();
    // The request waits in the queue now: look at it.
    dispatcher.schedule();
  };

  const cancelledHere: ProcessorShape['cancelled'] = (reqId) => {
    if (!caller.abort(reqId) && working.has(reqId)) cancelledEarly.add(reqId);
    waiters.tell(reqId);
  };

  const idle = () =>
    new Promise<void>((resolve) => {
      idleWaiters.push(resolve);
      dispatcher.schedule();
      // Taking no work, the pool schedules no look that would settle it.
      settleIdle();
    });

  /**
   * Stops: aborts every model call and records nothing for them. With `release` (a clean stop), their attempts are
   * given back at once, so that another process takes them up without waiting for the leases to lapse; without it (a
   * test's simulated crash), they lapse.
   */
  const stop = async ({ release = true }: { readonly release?: boolean } = {}) => {
    stopped = true;
    stopHearing();
    await dispatcher.stop();
    leaseKeeper.stop();
    stopHearingOthers();
    caller.stop();
    const running = [...working.values()];
    await Promise.allSettled(running.map((attempt) => attempt.done));
    if (release) {
      const now = clock.now();
      await Promise.allSettled(running.map(({ reqId, attempt }) => queue.release({ reqId, attempt, owner }, now)));
    }
    for (const resolve of idleWaiters.splice(0)) resolve();
    idleWaiters = [];
  };

  return {
    owner,
    wake: dispatcher.schedule,
    reserve,
    admission: admission.take,
    refusesNow: () => (slots.free() > 0 ? undefined : admission.full()),
    backlog: admission.backlog,
    submitted,
    cancelled: cancelledHere,
    outcome: waiters.wait,
    inFlight: () => working.size,
    idle,
    stopTakingWork: () => {
      stoppedTaking = true;
      settleIdle();
    },
    stop,
  };
};

/** The pool as a layer: started when built (taking up whatever the store holds due), stopped with its scope. */
export const ProcessorLayer = Layer.effect(
  Processor,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const processor = yield* Effect.acquireRelease(
      Effect.gen(function* () {
        return createProcessor({
          store: yield* Store,
          committer: yield* Committer,
          models: yield* Models,
          clock: yield* AppClock,
          log: yield* Log,
          // A name that tells this process, where the store can tell whether a process is gone (LMDB).
          owner: (yield* Store).owners?.name('proc'),
          concurrency: config.processing.concurrency,
          policy: { ...defaultRetryPolicy, maxAttempts: config.processing.maxAttempts },
          leaseMs: config.processing.leaseSeconds * 1000,
          // The plans in force at each claim (a reload changes them).
          maxProcessing: () => maxProcessingByPlan(config.plans),
          accountShare: config.processing.maxAccountShare,
          batchShare: config.batches.minShare,
          promoteAfterMs: config.processing.promoteAfterSeconds * 1000,
          maxBacklog: config.processing.maxBacklog,
          metrics: Option.getOrUndefined(yield* Effect.serviceOption(Metrics)),
          live: Option.getOrUndefined(yield* Effect.serviceOption(LiveOutput)),
          lineInputs: Option.getOrUndefined(yield* Effect.serviceOption(LineReader))?.inputOf,
        });
      }),
      (p) => Effect.promise(() => p.stop()),
    );
    processor.wake();
    const { wake, reserve, admission, refusesNow, submitted, cancelled, outcome, inFlight, idle, stopTakingWork } =
      processor;
    return Processor.of({
      wake,
      reserve,
      admission,
      refusesNow,
      submitted,
      cancelled,
      outcome,
      inFlight,
      idle,
      stopTakingWork,
    });
  }),
);
