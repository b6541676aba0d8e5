import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Option from 'effect/Option';
import { maxProcessingByPlan } from '../../domain/plans.js';
import { defaultRetryPolicy } from '../../domain/request/retryPolicy.js';
import { AppClock } from '../../ports/Clock.js';
import { Log } from '../../ports/Logger.js';
import { Store } from '../../ports/Store.js';
import { AppConfig } from '../AppConfig.js';
import { Committer } from '../Committer.js';
import { LiveOutput } from '../LiveOutput.js';
import { Metrics } from '../Metrics.js';
import { Models } from '../Models.js';
import { LineReader } from './lineReader.js';
import type { ProcessorShape } from './processorShape.js';
import { createProcessor } from './workerPool.js';

// The service's shape, the pool itself and the models' bounds it reads are in files of their own; importers keep
// reading them here.
export { fallbacksOf, upstreamPlacesOf } from './modelBounds.js';
export type { ProcessorShape, StartNow } from './processorShape.js';
export { createProcessor, newOwner, type ProcessorDeps } from './workerPool.js';

export class Processor extends Context.Service<Processor, ProcessorShape>()('airs/Processor') {}

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
