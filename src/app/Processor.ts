import { Context, Effect, Layer } from 'effect';
import type { Logger } from 'pino';
import { type Command, isRefusal, type Refusal } from '../domain/commands.js';
import type { Unavailable } from '../domain/errors.js';
import { defaultRetryPolicy, type RetryPolicy } from '../domain/request/retryPolicy.js';
import { AppClock, type ClockShape } from '../ports/Clock.js';
import { Log } from '../ports/Logger.js';
import { type CommandOutcome, Store, type StoreShape } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { Committer, type CommitterShape } from './Committer.js';
import { pickFairly } from './dispatchPolicy.js';
import { Models, type ModelsShape } from './Models.js';

export interface ProcessorShape {
  /** Tells the pool there may be new work (called after a submit commits). Cheap; coalesced. */
  wake(): void;
  /** Requests being worked on right now. */
  inFlight(): number;
  /** Resolves when no work is in flight and none is available now (for tests and graceful shutdown). */
  idle(): Promise<void>;
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
};

type Outcome = { ok: true; text: string } | { ok: false; reason: string };

/**
 * The worker pool. It takes queued requests from the dispatch index (in LMDB), accounts in turn (pickFairly), up
 * to `concurrency` at a time and up to each model's `maxConcurrency`. The starts of everything it picks in one go
 * are one batch for the committer (one durable write); each model is called only once its start is on disk, so the
 * model is called at most once per recorded attempt. Outcomes go to the committer as they arrive. What it holds in
 * memory is bounded by `concurrency`: the queue itself lives on disk, so a restart simply continues from it,
 * including requests that were being processed when the process died.
 */
export const createProcessor = (deps: Deps) => {
  const { store, committer, models, clock, log } = deps;
  /** Requests picked and not settled yet: from before their start is committed until their outcome is. */
  const running = new Map<string, Promise<void>>();
  const runningPerModel = new Map<string, number>();
  const modelLimit = (id: string) => models.get(id)?.config.maxConcurrency ?? Number.POSITIVE_INFINITY;
  let lastAccount: string | undefined;
  const shutdown = new AbortController();
  /** Model calls in flight, aborted together when the pool stops. */
  const calls = new Set<AbortController>();
  let pumpScheduled = false;
  let timer: NodeJS.Timeout | undefined;
  let idleWaiters: Array<() => void> = [];

  const send = async (command: Command): Promise<Refusal | undefined> => {
    const outcome = await committer.send(command);
    return isRefusal(outcome) ? outcome : undefined;
  };

  const callModel = async (reqId: string, modelId: string): Promise<Outcome> => {
    const prompt = store.reads.payload(reqId, 'prompt');
    const model = models.get(modelId);
    if (prompt === undefined || model === undefined) {
      return { ok: false, reason: model === undefined ? 'model is no longer configured' : 'prompt is missing' };
    }
    // One controller per call, aborted by its own timer or by shutdown. `AbortSignal.any` over the long-lived
    // shutdown signal and a timeout signal cost a few per cent of a request on Node 20.
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), model.config.timeoutMs);
    calls.add(controller);
    // A call that begins after the pool was told to stop is aborted at once, like the ones already running.
    if (shutdown.signal.aborted) controller.abort();
    try {
      return { ok: true, text: await model.provider.generate({ prompt, signal: controller.signal }) };
    } catch (error) {
      const timedOut = controller.signal.aborted && !shutdown.signal.aborted;
      return { ok: false, reason: timedOut ? `timed out after ${model.config.timeoutMs} ms` : describe(error) };
    } finally {
      clearTimeout(timer);
      calls.delete(controller);
    }
  };

  /** One attempt from its recorded start: `started` settles when the start is durable (or refused). */
  const attempt = async (
    reqId: string,
    modelId: string,
    started: Promise<CommandOutcome | Unavailable>,
  ): Promise<void> => {
    if (isRefusal(await started)) {
      // Past its expiry a request is never processed: expire it now rather than wait for the sweeper.
      const refused = await send({ type: 'Expire', reqId, now: clock.now() });
      if (refused !== undefined) log.error({ reqId, reason: refused.message }, 'queued request could not be started');
      return;
    }
    const outcome = await callModel(reqId, modelId);
    // Stopping: leave the request as it is; the next start picks it up again.
    if (shutdown.signal.aborted) return;
    const now = clock.now();
    const refused = await send(
      outcome.ok
        ? { type: 'RecordSuccess', reqId, responseChars: outcome.text.length, response: outcome.text, now }
        : { type: 'RecordFailure', reqId, reason: outcome.reason, policy: deps.policy, now },
    );
    if (refused !== undefined) log.warn({ reqId, reason: refused.message }, 'outcome not recorded');
    else if (!outcome.ok) log.warn({ reqId, reason: outcome.reason }, 'attempt failed');
  };

  const pump = () => {
    pumpScheduled = false;
    if (shutdown.signal.aborted) return;
    const now = clock.now();
    const free = deps.concurrency - running.size;
    const pick =
      free > 0
        ? pickFairly(
            store.reads,
            { lastAccount, running: new Set(running.keys()), runningPerModel },
            { free, modelLimit },
            now,
          )
        : undefined;
    if (pick !== undefined) lastAccount = pick.lastAccount;
    // Sent in one turn, the starts of this pick share one batch: one durable write for all of them.
    for (const { reqId, model } of pick?.picked ?? []) {
      runningPerModel.set(model, (runningPerModel.get(model) ?? 0) + 1);
      const started = committer.send({ type: 'StartAttempt', reqId, now });
      const run = attempt(reqId, model, started)
        .catch((error: unknown) => log.error({ reqId, err: error }, 'processing fault'))
        .finally(() => {
          running.delete(reqId);
          runningPerModel.set(model, (runningPerModel.get(model) ?? 1) - 1);
          wake();
        });
      running.set(reqId, run);
    }
    // Requests waiting out a retry backoff become available later: one timer for the earliest of them.
    if (pick !== undefined && pick.picked.length === 0) scheduleWake(pick.nextAvailableAt, now);
    if (running.size === 0) for (const resolve of idleWaiters.splice(0)) resolve();
  };

  const scheduleWake = (at: number | undefined, now: number) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = at === undefined ? undefined : setTimeout(wake, Math.max(0, at - now) + 1);
    timer?.unref();
  };

  const wake = () => {
    if (pumpScheduled || shutdown.signal.aborted) return;
    pumpScheduled = true;
    setImmediate(pump);
  };

  const idle = () =>
    new Promise<void>((resolve) => {
      idleWaiters.push(resolve);
      wake();
    });

  const stop = async () => {
    shutdown.abort();
    for (const call of calls) call.abort();
    if (timer !== undefined) clearTimeout(timer);
    await Promise.allSettled(running.values());
    for (const resolve of idleWaiters.splice(0)) resolve();
    idleWaiters = [];
  };

  return { wake, idle, stop, inFlight: () => running.size };
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
    };
    const processor = yield* Effect.acquireRelease(
      Effect.sync(() => createProcessor(deps)),
      (p) => Effect.promise(() => p.stop()),
    );
    processor.wake();
    return Processor.of({ wake: processor.wake, inFlight: processor.inFlight, idle: processor.idle });
  }),
);
