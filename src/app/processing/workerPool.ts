/** One process's worker pool (createProcessor): its parts held together, from a submit or a claim to an outcome. */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import type { RetryPolicy } from '../../domain/request/retryPolicy.js';
import type { ClockShape } from '../../ports/Clock.js';
import type { StoreShape } from '../../ports/Store.js';
import { workQueueOver } from '../../storage/workQueue.js';
import type { CommitterShape } from '../Committer.js';
import type { LiveOutputShape } from '../LiveOutput.js';
import type { MetricsShape } from '../Metrics.js';
import type { ModelsShape } from '../Models.js';
import type { ModelInput } from '../storedInput.js';
import { createAdmission } from './admission.js';
import { type Attempt, createAttemptRunner, logAttemptFault } from './attempts.js';
import { hearCommits } from './commitHearing.js';
import { createDispatcher } from './dispatcher.js';
import { createLeaseKeeper } from './leaseKeeper.js';
import type { LineInputs } from './lineReader.js';
import { currentBoundsOf } from './modelBounds.js';
import { createModelCaller } from './modelCall.js';
import type { ProcessorShape } from './processorShape.js';
import { createSlots } from './slots.js';
import { createUpstreamHealthBook } from './upstreamHealthBook.js';
import { createWaiters } from './waiters.js';

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
  // Each model's bound, upstreams and fallbacks, read again only after a reload (modelBounds.ts).
  const current = currentBoundsOf(deps.models);
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

  /** Runs an attempt whose worker is held and whose start is durable. */
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

  // From here on, commits (this process's, other processes', a shared writer's) reach the parts they concern.
  const { stopHearing, stopHearingOthers } = hearCommits({
    store,
    committer,
    dispatcher,
    caller,
    working,
    cancelledHere,
  });

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
