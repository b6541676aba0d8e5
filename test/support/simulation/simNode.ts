import { Effect, Layer } from 'effect';
import type fc from 'fast-check';
import { AppConfig } from '../../../src/app/AppConfig.js';
import { Committer, createCommitter } from '../../../src/app/Committer.js';
import { Models, type ModelsShape } from '../../../src/app/Models.js';
import { createProcessor, Processor } from '../../../src/app/processing/Processor.js';
import { Requests, RequestsLayer, type RequestsShape } from '../../../src/app/Requests.js';
import { createSweeper } from '../../../src/app/Sweeper.js';
import type { Config } from '../../../src/config.js';
import { maxProcessingByPlan } from '../../../src/domain/plans.js';
import { defaultRetryPolicy } from '../../../src/domain/request/retryPolicy.js';
import { AppClock, type ClockShape } from '../../../src/ports/Clock.js';
import { Ids, type IdsShape } from '../../../src/ports/Ids.js';
import { silentLogger } from '../../../src/ports/Logger.js';
import { type Batch, type CommandOutcome, Store, type StoreShape } from '../../../src/ports/Store.js';

/**
 * One airs process of the simulation: its committer, worker pool, submit and cancel path (the Requests service) and
 * expiry sweeper, as the server wires them, over a store shared by every process of the run. Its commits reach the
 * store only when the fast-check scheduler lets them, so the order of commits, timers and model answers is the
 * scheduler's to choose. A crash kills it at once: nothing it does afterwards counts, and the commits it had in
 * flight land on the store or are lost, (a prefix of them, in order), as on a real disk.
 */
export type SimNode = {
  readonly requests: RequestsShape;
  /** Kills the process. The first `landing` of the commits it had in flight land after all (they were durable). */
  crash(landing: number): void;
};

/**
 * Ids in the forms airs issues (identifiers.ts), from a counter: the simulation must be reproducible from its seed.
 * Request ids stay ordered by creation (the counter where the time would be).
 */
export const simIds = (): IdsShape => {
  let next = 0;
  const counter = (digits: number) => String(++next).padStart(digits, '0');
  return {
    requestId: () => `req_${counter(12)}${'s'.repeat(22)}`,
    accountId: () => `acct_sim${counter(13)}`,
    keyId: () => `key_sim${counter(13)}`,
    apiKey: () => `sk_sim${counter(6)}`,
    webhookEndpointId: () => `whep_sim${counter(13)}`,
    webhookSecretId: () => `whsk_sim${counter(13)}`,
  };
};

export const startSimNode = (deps: {
  readonly store: StoreShape;
  readonly scheduler: fc.Scheduler;
  readonly models: ModelsShape;
  readonly config: Config;
  readonly clock: ClockShape;
  readonly ids: IdsShape;
  readonly sweepIntervalMs: number;
}): SimNode => {
  let dead = false;
  const never = new Promise<never>(() => {});
  /**
   * Batches sent and not applied yet, oldest first. One process's commits reach the disk in the order it sent them
   * (lmdb-js writes them in turn), so releasing one applies every older one first; each caller still hears back only
   * when the scheduler releases its own commit.
   */
  type Sent = { readonly batch: Batch; outcome?: Promise<readonly (CommandOutcome | Error)[]> };
  let unapplied: Sent[] = [];
  const applyThrough = (sent: Sent) => {
    while (sent.outcome === undefined) {
      const oldest = unapplied.shift() as Sent;
      oldest.outcome = deps.store.commit(oldest.batch);
    }
  };
  const handle: StoreShape = {
    reads: deps.store.reads,
    spend: (spends) => deps.store.spend(spends),
    throttle: deps.store.throttle,
    files: deps.store.files,
    commit: (batch) => {
      const sent: Sent = { batch };
      unapplied.push(sent);
      return deps.scheduler.schedule(Promise.resolve(), 'commit').then(() => {
        if (dead) return never;
        applyThrough(sent);
        return sent.outcome as Promise<readonly (CommandOutcome | Error)[]>;
      });
    },
    close: async () => {},
  };
  const log = silentLogger();
  const committer = createCommitter(handle);
  const processor = createProcessor({
    store: handle,
    committer,
    models: deps.models,
    clock: deps.clock,
    log,
    concurrency: deps.config.processing.concurrency,
    policy: { ...defaultRetryPolicy, maxAttempts: deps.config.processing.maxAttempts },
    leaseMs: deps.config.processing.leaseSeconds * 1000,
    maxProcessing: maxProcessingByPlan(deps.config.plans),
    accountShare: deps.config.processing.maxAccountShare,
    promoteAfterMs: deps.config.processing.promoteAfterSeconds * 1000,
  });
  const requests = Effect.runSync(
    Effect.gen(function* () {
      return yield* Requests;
    }).pipe(
      Effect.provide(
        RequestsLayer.pipe(
          Layer.provide(
            Layer.mergeAll(
              Layer.succeed(AppConfig, deps.config),
              Layer.succeed(Store, handle),
              Layer.succeed(AppClock, deps.clock),
              Layer.succeed(Ids, deps.ids),
              Layer.succeed(Models, deps.models),
              Layer.succeed(Processor, processor),
              Layer.succeed(Committer, committer),
            ),
          ),
        ),
      ),
    ),
  );
  const sweeper = createSweeper(handle, committer, deps.clock, log);
  const sweep = setInterval(() => void sweeper.sweep().catch(() => {}), deps.sweepIntervalMs);
  // As the server does on start: whatever the store holds queued or being processed is taken up.
  processor.wake();
  return {
    requests,
    crash: (landing) => {
      dead = true;
      // The first `landing` of the commits in flight were on disk already; the rest are lost with the process.
      for (const sent of unapplied.slice(0, landing)) sent.outcome = deps.store.commit(sent.batch);
      unapplied = [];
      clearInterval(sweep);
      // Its synchronous part aborts every model call and clears the pool's timers; the rest waits on commits that
      // will never answer a dead process, so it is not awaited. A dead process gives nothing back: its leases lapse.
      void processor.stop({ release: false });
      void committer.stop();
    },
  };
};
