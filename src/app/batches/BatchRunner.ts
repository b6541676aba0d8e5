import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import * as Schedule from 'effect/Schedule';
import { defaultMaxAnswerBytes, maxAnswerBytesOf } from '../../config.js';
import { effectiveLimits } from '../../domain/account/limits.js';
import { type BatchView, linesDone, mayCloseWindow, mayTakeBatch, stopsLines } from '../../domain/batch/state.js';
import { AppClock } from '../../ports/Clock.js';
import { Ids } from '../../ports/Ids.js';
import { Log } from '../../ports/Logger.js';
import { StorageFault, Store } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { Committer } from '../Committer.js';
import { Models, passThroughOfModels } from '../Models.js';
import { Processor } from '../processing/Processor.js';
import { createTokenBudget } from '../tokenBudget.js';
import { BatchEndpoints } from './BatchEndpoints.js';
import { type BatchRunnerDeps, type BatchStep, batchSender, handledSends, LostLease } from './batchWork.js';
import { cancelLines } from './cancelLines.js';
import { sweepFiles } from './fileSweep.js';
import { createLineBudget } from './lineBudget.js';
import { type Look, type OpenBatchTurnsBounds, openBatchTurns } from './openBatchTurns.js';
import { finalizeBatch } from './outputFiles.js';
import { queueLines } from './queueLines.js';
import { validateBatch } from './validateBatch.js';
import { isWaitedOut, recordWorkFailure } from './workFailures.js';

/**
 * Each server process looks after the batches that have not ended (contract 16): it validates a batch's input file,
 * queues its lines as requests, cancels them when the batch is cancelled or its window passes, and writes its output
 * and error files once every line has ended. One process at a time does a batch's housekeeping, under the batch's
 * lease (the machine refuses every step from another); a process that dies leaves it to another once the lease
 * lapses. Every step is safe to do again: a line's request id is made from the batch and the line, so a line queued
 * before a crash is refused when queued again; the output files are made in the same write as the batch's end.
 * The lines themselves are run by the pool like any request (fairness: claimFairly.ts).
 */
export interface BatchRunnerShape {
  /**
   * Looks at open batches now, accounts in turn, a bounded number from where the last tick stopped, and starts the work
   * each needs while this process has a place for it (what the timer and the store's changes do).
   */
  tick(): Promise<void>;
  /** Resolves once no batch work is in flight in this process. */
  idle(): Promise<void>;
  /** Deletes expired files and removes bytes that no file names (an upload cut by a crash). */
  sweepFiles(): Promise<void>;
  /** Stops the work in flight at its next step (its lease lapses, and another process goes on with it). */
  stop(): void;
}

export class BatchRunner extends Context.Service<BatchRunner, BatchRunnerShape>()('airs/BatchRunner') {}

/** What bounds a process's batch work, and how a free place wakes the runner. */
export type BatchWorkBounds = {
  /** Batches worked on at once by this process, at most (`batches.maxConcurrentWork`). */
  readonly maxConcurrentWork: number;
  /** The open batches a tick looks at (openBatchTurns.ts). */
  readonly turns?: OpenBatchTurnsBounds;
  /** Asks for a tick soon: a place came free while a batch waited for one. */
  readonly wake: () => void;
};

export const createBatchRunner = (given: BatchRunnerDeps, bounds: BatchWorkBounds): BatchRunnerShape => {
  const deps: BatchRunnerDeps = { ...given, send: handledSends(given.send) };
  const { store, owner, log } = deps;
  const working = new Map<string, Promise<void>>();
  const turns = openBatchTurns(store.reads, bounds.turns);
  let waitingForPlace = false;
  let stopping = false;
  const sendBatch = batchSender(deps.send);

  /** Keeps the batch's lease while its work goes on: renewed once a third of it has passed. */
  const leaseKeeper = (batchId: string) => {
    let renewedAt = deps.now();
    return async () => {
      if (stopping) throw new LostLease();
      if (deps.now() - renewedAt < deps.leaseMs / 3) return;
      renewedAt = deps.now();
      const taken = await sendBatch(batchId, { type: 'TakeBatch', owner, leaseMs: deps.leaseMs, now: renewedAt });
      if (taken === undefined) throw new LostLease();
    };
  };

  /**
   * Does the step the batch needs now; whether another may follow at once (false: the batch waits for its lines, has
   * ended, or is no longer this process's).
   */
  const stepOnce = async (step: BatchStep, view: BatchView): Promise<boolean> => {
    const { batchId, total: given = 0, quotaSpent } = view.state.context;
    const { status } = view.state;
    // Its account's token budget used up: the lines queued are all it will have.
    const total = quotaSpent === undefined ? given : view.counts.queued;
    if (status === 'validating') await validateBatch(step, view);
    else if (status === 'in_progress' && view.counts.queued < total) await queueLines(step, view);
    else if (status === 'in_progress' && linesDone(view.counts) === total)
      await sendBatch(batchId, { type: 'FinalizeBatch', owner, now: deps.now() });
    else if (stopsLines(status)) {
      await cancelLines(step, view);
      const after = await store.reads.batch(batchId);
      if (after === undefined || linesDone(after.counts) !== after.counts.queued) return false;
      await sendBatch(batchId, { type: 'FinalizeBatch', owner, now: deps.now() });
    } else if (status === 'finalizing') {
      await finalizeBatch(step, view);
      return false;
    } else return false;
    return true;
  };

  /**
   * Does whatever the batch needs next, step after step, while this process holds its lease. A step that fails for a
   * reason waiting does not mend is recorded as the batch's (workFailures.ts), and the machine ends the batch after a
   * few: nothing is retried forever.
   */
  const work = async (batchId: string) => {
    let view = await store.reads.batch(batchId);
    if (view === undefined) return;
    const taken = await sendBatch(batchId, { type: 'TakeBatch', owner, leaseMs: deps.leaseMs, now: deps.now() });
    if (taken === undefined) return;
    const step: BatchStep = { deps, sendBatch, keep: leaseKeeper(batchId) };
    for (let turn = 0; turn < 8; turn++) {
      view = await store.reads.batch(batchId);
      if (view === undefined) return;
      try {
        if (!(await stepOnce(step, view))) return;
      } catch (error) {
        // A process that stops leaves the work as it is: its errors then are the stop's, not the batch's.
        if (stopping || isWaitedOut(error)) throw error;
        await recordWorkFailure(step, view, error);
        return;
      }
    }
  };

  /**
   * Whether the batch needs this process now: this process may take its lease (the machine says so), and there is work:
   * any in validating, cancelling, expiring, failing or finalizing; in progress, lines left to queue or all of them
   * ended.
   */
  const needsWork = (view: BatchView, now: number): boolean => {
    if (!mayTakeBatch(view.state, owner, now)) return false;
    if (view.state.status !== 'in_progress') return true;
    const total = view.state.context.quotaSpent === undefined ? (view.state.context.total ?? 0) : view.counts.queued;
    return view.counts.queued < total || linesDone(view.counts) === total;
  };

  /** Starts the batch's work, and says when it ends (a place is free again). */
  const start = (batchId: string) => {
    const job = work(batchId)
      .catch((error: unknown) => {
        if (error instanceof LostLease) return;
        if (error instanceof StorageFault) log.debug({ batchId, reason: error.message }, 'batch work paused');
        else log.error({ err: error, batchId }, 'batch work failed; it is taken up again');
      })
      .finally(() => {
        working.delete(batchId);
        // A walk stopped for want of a place: the batch it stopped at takes this one.
        if (waitingForPlace) {
          waitingForPlace = false;
          bounds.wake();
        }
      });
    working.set(batchId, job);
  };

  /** A look at one open batch: its window closed, its work started, or nothing; `stop` when it needs work and every
   * place is taken (the next walk starts with it). */
  const look = async (batchId: string): Promise<Look> => {
    if (working.has(batchId)) return 'next';
    const view = await store.reads.batch(batchId);
    if (view === undefined) return 'next';
    const now = deps.now();
    // Past its window: closed by whichever process sees it first (the machine takes it once).
    if (mayCloseWindow(view.state, now)) {
      await deps.send({ type: 'Batch', batchId, command: { type: 'CloseWindow', now } });
      return 'next';
    }
    if (!needsWork(view, now)) return 'next';
    if (working.size >= bounds.maxConcurrentWork) {
      waitingForPlace = true;
      return 'stop';
    }
    start(batchId);
    return 'next';
  };

  const tick = async () => {
    await turns.walk(look);
  };

  return {
    tick,
    sweepFiles: () => sweepFiles(deps),
    stop: () => {
      stopping = true;
    },
    idle: async () => {
      while (working.size > 0) await Promise.all(working.values());
    },
  };
};

/** How often each process looks at the open batches even when nothing is heard (a lease that lapsed, a window). */
const tickMs = 1_000;
/** How often expired files and bytes that no file names are swept. */
const fileSweepMs = 60_000;
/** The store's changes wake the runner at most this often (a 100,000-line batch changes it all the time). */
const wakeMs = 100;

export const BatchRunnerLayer = Layer.effect(
  BatchRunner,
  Effect.gen(function* () {
    const config = yield* AppConfig;
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const tokenBudget = createTokenBudget({ reads: store.reads, plans: () => config.plans, now: () => clock.now() });
    const log = yield* Log;
    const ids = yield* Ids;
    const models = yield* Models;
    const endpoints = yield* BatchEndpoints;
    const processor = Option.getOrUndefined(yield* Effect.serviceOption(Processor));
    const runner = createBatchRunner(
      {
        store,
        send: (command) => committer.send(command),
        now: () => clock.now(),
        log,
        owner: store.owners?.name('batches') ?? `batches-${process.pid}-${ids.requestId().slice(-8)}`,
        endpoints,
        rules: {
          // Read at each use: a reload adds and removes models.
          get modelIds() {
            return models.ids();
          },
          maxPromptChars: config.maxPromptChars,
          maxPromptBytes: config.maxPromptBytes,
        },
        providerOf: (model) => models.get(model)?.config.provider,
        passThroughOf: passThroughOfModels(models),
        newFileId: () => `file-${ids.requestId().slice('req_'.length)}`,
        leaseMs: config.processing.leaseSeconds * 1000,
        maxLines: config.batches.maxLines,
        maxLineBytes: config.maxBodyBytes,
        jsonBounds: { maxDepth: config.maxJsonDepth, maxValues: config.maxJsonValues },
        requestTtlMs: config.requestTtlSeconds * 1000,
        maxAttempts: config.processing.maxAttempts,
        outputExpiresAfterSeconds: config.batches.outputExpiresAfterSeconds,
        lineBudget: createLineBudget({
          maxLines: config.batches.maxLinesInFlight,
          maxBytes: config.batches.maxLineBytesInFlight,
          accountShare: config.batches.maxAccountShareInFlight,
        }),
        maxLinesAhead: config.batches.maxLinesAhead,
        // Twice what the line's model may answer (models[].maxAnswerBytes): the answer kept, and its output line.
        answerRoom: (model) => {
          const configured = models.get(model)?.config;
          return 2 * (configured === undefined ? defaultMaxAnswerBytes : maxAnswerBytesOf(configured));
        },
        allowedModelsOf: async (accountId) => {
          const account = await store.reads.account(accountId);
          return account === undefined ? undefined : effectiveLimits(config.plans, account).allowedModels;
        },
        maxStoredBytes: async (accountId) => {
          const account = await store.reads.account(accountId);
          return account === undefined ? undefined : effectiveLimits(config.plans, account).maxFileStorageBytes;
        },
        cancelRunning: processor === undefined ? undefined : (reqId) => processor.cancelled(reqId),
        tokenRefusal: async (accountId) => {
          const account = await store.reads.account(accountId);
          if (account === undefined) return undefined;
          return tokenBudget.check({ accountId, plan: account.plan, limits: effectiveLimits(config.plans, account) });
        },
      },
      { maxConcurrentWork: config.batches.maxConcurrentWork, wake: () => tick() },
    );
    let ticking: Promise<void> | undefined;
    let again = false;
    let stopped = false;
    const tick = () => {
      if (stopped) return;
      if (ticking !== undefined) {
        again = true;
        return;
      }
      ticking = runner
        .tick()
        .catch((error: unknown) => {
          if (!(error instanceof StorageFault)) log.error({ err: error }, 'batch runner tick failed');
        })
        .finally(() => {
          ticking = undefined;
          if (again) {
            again = false;
            setTimeout(tick, wakeMs).unref();
          }
        });
    };
    let sweeping: Promise<void> = Promise.resolve();
    const sweep = () => {
      sweeping = runner.sweepFiles().catch((error: unknown) => {
        if (!(error instanceof StorageFault)) log.error({ err: error }, 'file sweep failed');
      });
    };
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const stopHearing = store.reads.onChange(tick);
        tick();
        return stopHearing;
      }),
      (stopHearing) =>
        Effect.promise(async () => {
          stopped = true;
          runner.stop();
          stopHearing();
          await ticking;
          await sweeping;
          await runner.idle();
        }),
    );
    // The timers, as fibers of the layer's scope on Effect's clock (as the sweeper's): made after the release above,
    // they are interrupted before it runs, so no tick starts once it has begun.
    yield* Effect.forkScoped(Effect.schedule(Effect.sync(tick), Schedule.fixed(tickMs)));
    yield* Effect.forkScoped(Effect.schedule(Effect.sync(sweep), Schedule.fixed(fileSweepMs)));
    return BatchRunner.of(runner);
  }),
);
