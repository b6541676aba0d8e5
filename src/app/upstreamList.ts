import { type ModelConfig, upstreamsOf } from '../config.js';
import { modelCounter, upstreamCounter } from '../domain/processingCounters.js';
import type { UpstreamState } from '../domain/upstreamChoice.js';
import { stateAt, type UpstreamHealth } from '../domain/upstreamHealth.js';
import type { ReadModel } from '../ports/Store.js';

/** One upstream of a configured model, as `airs models list` and `/metrics` show it: never its key. */
export type UpstreamRow = {
  readonly model: string;
  readonly name: string;
  readonly baseUrl: string;
  /** Its places (null: unbounded, the one upstream of a model without `maxConcurrency`). */
  readonly maxConcurrency: number | null;
  /** Calls on it now, in all processes and nodes (the store's processing counter). */
  readonly inFlight: number;
  /** `in_service`, `out_of_service` (its cool-down runs until `until`) or `trying` (one trial call may test it). */
  readonly state: UpstreamState;
  readonly until?: number | undefined;
  readonly lastError?: string | undefined;
};

/** The store's reads the list needs: the processing counters, and each upstream's health where the store keeps it
 * (upstreamHealth.ts; absent, or nothing recorded: in service, as the claim takes it). */
export type UpstreamReads = Pick<ReadModel, 'processingCount'> & {
  upstreamHealth?(model: string, upstream: string): Promise<UpstreamHealth | undefined>;
};

/**
 * Every upstream of the configured `openai` models (echo has none), in config order, with its calls in flight and
 * health as the store holds them now. Bounded by the config: at most its models × their upstreams (64 each).
 */
export const upstreamRows = async (
  models: readonly ModelConfig[],
  reads: UpstreamReads,
  now: number,
): Promise<UpstreamRow[]> => {
  const places = models.flatMap((model) => {
    if (model.provider !== 'openai') return [];
    const upstreams = upstreamsOf(model);
    // A model of one upstream is not placed (its calls count only in the model's counter): all of them are on it.
    return upstreams.map((upstream) => ({
      model: model.id,
      upstream,
      counter: upstreams.length === 1 ? modelCounter(model.id) : upstreamCounter(model.id, upstream.name),
    }));
  });
  return Promise.all(
    places.map(async ({ model, upstream, counter }) => {
      const [inFlight, seen] = await Promise.all([
        reads.processingCount(counter),
        reads.upstreamHealth?.(model, upstream.name),
      ]);
      return {
        model,
        name: upstream.name,
        baseUrl: upstream.baseUrl,
        maxConcurrency: Number.isFinite(upstream.places) ? upstream.places : null,
        inFlight,
        state: stateAt(seen, now),
        ...(seen?.outUntil === undefined ? {} : { until: seen.outUntil }),
        ...(seen?.lastError === undefined ? {} : { lastError: seen.lastError }),
      };
    }),
  );
};
