import { type ModelProvider, UpstreamFailed, type UpstreamProblem } from '../ports/ModelProvider.js';
import { causeOf } from './upstreamProblems.js';

/**
 * A model's upstream as this process last saw it: not yet seen (`unchecked`), answering (`ok`), or with a problem
 * (its cause in an operator's words, never the URL or an address: `/readyz` shows it without a key).
 */
export type UpstreamSeen = {
  readonly state: 'unchecked' | 'ok' | 'problem';
  readonly cause?: string | undefined;
  /** When it was seen so, as an ISO 8601 time. */
  readonly seen_at?: string | undefined;
};

/**
 * The last-seen state of each `openai` model's upstream: by the check at start (`airs serve`) and by every model call
 * since (an answer, or a failure at the upstream). Shown by `/readyz`, never part of readiness: a server whose upstream
 * is down still takes requests, which wait and are retried.
 */
export const createUpstreamStates = (models: readonly string[], now: () => number = Date.now) => {
  const seen = new Map<string, UpstreamSeen>(models.map((model) => [model, { state: 'unchecked' }]));
  return {
    see(model: string, problem: UpstreamProblem | undefined): void {
      if (!seen.has(model)) return;
      const at = new Date(now()).toISOString();
      seen.set(
        model,
        problem === undefined
          ? { state: 'ok', seen_at: at }
          : { state: 'problem', cause: causeOf(problem, false), seen_at: at },
      );
    },
    /** Every model's state, by model id. */
    all: (): Readonly<Record<string, UpstreamSeen>> => Object.fromEntries(seen),
  };
};

export type UpstreamStates = ReturnType<typeof createUpstreamStates>;

/** A provider whose calls tell `states` how its upstream answered (an error that is no upstream's changes nothing). */
export const watchedProvider = (provider: ModelProvider, model: string, states: UpstreamStates): ModelProvider => ({
  ...provider,
  generate: async (input) => {
    try {
      const generation = await provider.generate(input);
      states.see(model, undefined);
      return generation;
    } catch (error) {
      if (error instanceof UpstreamFailed) states.see(model, error.problem);
      throw error;
    }
  },
});
