/** Each model's bound, upstreams and fallbacks as the claim and a submit take them, kept until a reload. */
import { upstreamsOf } from '../../config.js';
import type { Fallbacks } from '../../domain/claim.js';
import type { UpstreamPlace } from '../../domain/upstreamChoice.js';
import type { ModelsShape } from '../Models.js';

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

/** Each model's bound, upstreams and fallbacks, read from the models again after a reload (which adds, removes and
 * changes them, and makes a new list of ids): kept until then, since every claim reads them. */
export const currentBoundsOf = (models: ModelsShape) => {
  let seenIds: readonly string[] | undefined;
  let bounds = {
    modelLimits: {} as Record<string, number>,
    upstreams: {} as Record<string, readonly UpstreamPlace[]>,
    fallbacks: {} as Record<string, Fallbacks>,
  };
  return () => {
    const ids = models.ids();
    if (ids === seenIds) return bounds;
    seenIds = ids;
    const modelLimits: Record<string, number> = {};
    for (const id of ids) {
      const limit = models.get(id)?.config.maxConcurrency;
      if (limit !== undefined) modelLimits[id] = limit;
    }
    bounds = { modelLimits, upstreams: upstreamPlacesOf(models), fallbacks: fallbacksOf(models) };
    return bounds;
  };
};
