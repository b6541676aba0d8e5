import { type ModelConfig, upstreamsOf } from '../config.js';
import { upstreamCounter } from '../domain/processingCounters.js';
import type { ReadModel } from '../ports/Store.js';

/** An upstream's state as contract 19 names it: taking calls, out for a cool-down, or open to one trial call. */
export type UpstreamStateName = 'in_service' | 'out_of_service' | 'trying';

/** What the store says of an upstream's health (the core's view), as the list shows it. */
export type UpstreamHealthSeen = {
  readonly state: UpstreamStateName;
  /** Out of service until then (epoch ms). */
  readonly until?: number | undefined;
  readonly lastError?: string | undefined;
};

/** One upstream of a configured model, as `airs models list` and `/metrics` show it: never its key. */
export type UpstreamRow = {
  readonly model: string;
  readonly name: string;
  readonly baseUrl: string;
  /** Its places (null: unbounded, the one upstream of a model without `maxConcurrency`). */
  readonly maxConcurrency: number | null;
  /** Calls on it now, in all processes and nodes (the store's processing counter). */
  readonly inFlight: number;
  readonly state: UpstreamStateName;
  readonly until?: number | undefined;
  readonly lastError?: string | undefined;
};

/** Reads an upstream's health; undefined: nothing recorded against it (in service). */
export type HealthRead = (model: string, upstream: string) => Promise<UpstreamHealthSeen | undefined>;

/** No health read yet: every upstream without a recorded failure is in service. */
const noHealth: HealthRead = async () => undefined;

/**
 * Every upstream of the configured `openai` models (echo has none), in config order, with its calls in flight and
 * health as the store holds them now. Bounded by the config: at most its models × their upstreams (64 each).
 */
export const upstreamRows = async (
  models: readonly ModelConfig[],
  reads: Pick<ReadModel, 'processingCount'>,
  health: HealthRead = noHealth,
): Promise<UpstreamRow[]> => {
  const places = models.flatMap((model) =>
    model.provider === 'openai' ? upstreamsOf(model).map((upstream) => ({ model: model.id, upstream })) : [],
  );
  return Promise.all(
    places.map(async ({ model, upstream }) => {
      const [inFlight, seen] = await Promise.all([
        reads.processingCount(upstreamCounter(model, upstream.name)),
        health(model, upstream.name),
      ]);
      return {
        model,
        name: upstream.name,
        baseUrl: upstream.baseUrl,
        maxConcurrency: Number.isFinite(upstream.places) ? upstream.places : null,
        inFlight,
        state: seen?.state ?? 'in_service',
        ...(seen?.until === undefined ? {} : { until: seen.until }),
        ...(seen?.lastError === undefined ? {} : { lastError: seen.lastError }),
      };
    }),
  );
};
