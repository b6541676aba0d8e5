import * as Context from 'effect/Context';
import type { Config } from '../config.js';
import type { PlanTable } from '../domain/plans.js';

/**
 * The configuration in force, which a reload (SIGHUP, `airs models reload`) changes without a restart: its `models`
 * and `plans` are replaced; every other key keeps the value it had at start (they need a restart).
 */
export interface LiveConfigShape {
  /** The configuration as it stands now: `models` and `plans` read the latest applied, at each read. It is what
   * `AppConfig` gives, so a service that reads `config.plans[plan]` when a call comes sees a reload at once. */
  readonly config: Config;
  /** Applies a new file's `models` and `plans` (the caller checked it and decided what the rest means). */
  apply(next: Config): void;
  /** Hears each apply, after it took effect. Returns the way to stop hearing. */
  onApplied(listener: (config: Config) => void): () => void;
}

export class LiveConfig extends Context.Service<LiveConfig, LiveConfigShape>()('airs/LiveConfig') {}

export const createLiveConfig = (start: Config): LiveConfigShape => {
  let models: readonly Config['models'][number][] = start.models;
  let plans: PlanTable = start.plans;
  const listeners = new Set<(config: Config) => void>();
  // Getters, not a copy: whoever holds this object (the services, the HTTP face) reads what is current.
  const config: Config = Object.defineProperties(
    { ...start },
    {
      models: { get: () => models, enumerable: true },
      plans: { get: () => plans, enumerable: true },
    },
  );
  return {
    config,
    apply(next) {
      models = next.models;
      plans = next.plans;
      for (const listener of [...listeners]) listener(config);
    },
    onApplied(listener) {
      listeners.add(listener);
      return () => void listeners.delete(listener);
    },
  };
};
