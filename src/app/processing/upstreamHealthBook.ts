import type { Logger } from 'pino';
import {
  afterFailure,
  afterSuccess,
  type HealthView,
  stateAt,
  type UpstreamHealth,
} from '../../domain/upstreamHealth.js';

/**
 * Upstream health as this process learns it from its own calls (contract 19; docs/decisions.md, "health kept by each
 * process"): per model and upstream, changed by the domain's rules (upstreamHealth.ts) at each outcome of a call that
 * is the upstream's, each change of state logged once. Not in the store: another process learns on its own.
 */
export const createUpstreamHealthBook = (deps: {
  readonly log: Logger;
  /** The model's `upstreamFailures` (failures in a row that take an upstream out). */
  readonly threshold: (model: string) => number;
}) => {
  const book = new Map<string, Map<string, UpstreamHealth>>();
  const of = (model: string) => {
    let upstreams = book.get(model);
    if (upstreams === undefined) {
      upstreams = new Map();
      book.set(model, upstreams);
    }
    return upstreams;
  };

  const failed = (model: string, upstream: string, reason: string, now: number, retryAfterMs?: number) => {
    const upstreams = of(model);
    const step = afterFailure(upstreams.get(upstream), {
      reason,
      now,
      threshold: deps.threshold(model),
      retryAfterMs,
    });
    upstreams.set(upstream, step.health);
    if (step.change?.kind === 'out')
      deps.log.warn(
        { model, upstream, reason, until: new Date(step.change.until).toISOString() },
        'upstream out of service',
      );
  };

  const succeeded = (model: string, upstream: string) => {
    const upstreams = book.get(model);
    const before = upstreams?.get(upstream);
    if (upstreams === undefined || before === undefined) return;
    const step = afterSuccess(before);
    // In service with nothing counted: nothing to keep.
    upstreams.delete(upstream);
    if (step.change?.kind === 'back') deps.log.info({ model, upstream }, 'upstream back in service');
  };

  /** The upstreams not in service at `now` (out, or trying), as a claim carries them; undefined when none. */
  const view = (now: number): HealthView | undefined => {
    let out: Record<string, Record<string, UpstreamHealth>> | undefined;
    for (const [model, upstreams] of book)
      for (const [upstream, health] of upstreams) {
        if (stateAt(health, now) === 'in_service') continue;
        out ??= {};
        out[model] ??= {};
        (out[model] as Record<string, UpstreamHealth>)[upstream] = health;
      }
    return out;
  };

  /** The earliest end of a cool-down after `now` (work held for it may start then), if any. */
  const nextEnd = (now: number): number | undefined => {
    let next: number | undefined;
    for (const upstreams of book.values())
      for (const health of upstreams.values())
        if (health.outUntil !== undefined && health.outUntil > now && (next === undefined || health.outUntil < next))
          next = health.outUntil;
    return next;
  };

  /** Whether none of these upstreams of the model is in service at `now` (out, or waiting for its trial). */
  const noneInService = (model: string, upstreams: readonly string[], now: number) =>
    upstreams.length > 0 &&
    upstreams.every((upstream) => stateAt(book.get(model)?.get(upstream), now) !== 'in_service');

  return { failed, succeeded, view, nextEnd, noneInService };
};

export type UpstreamHealthBook = ReturnType<typeof createUpstreamHealthBook>;
