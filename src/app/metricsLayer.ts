import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { AppClock } from '../ports/Clock.js';
import { Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { Metrics } from './Metrics.js';

/**
 * The server's metrics, reading the queue from its store. prom-client is loaded only when this layer is built: a
 * management command, which shares the committer, gets `noMetricsLayer` and never loads it. Kept apart from
 * Metrics.ts, which prometheusMetrics.ts imports, so that the two never import each other.
 */
export const MetricsLayer = Layer.effect(
  Metrics,
  Effect.gen(function* () {
    const store = yield* Store;
    const clock = yield* AppClock;
    const config = yield* AppConfig;
    const { createMetrics } = yield* Effect.promise(() => import('./prometheusMetrics.js'));
    return Metrics.of(
      createMetrics({
        reads: store.reads,
        now: () => clock.now(),
        modelIds: config.models.map((m) => m.id),
        models: config.models,
      }),
    );
  }),
);
