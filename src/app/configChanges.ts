import type { Config } from '../config.js';

/** What a reload finds between the config in force and the file read again. */
export type ConfigChanges = {
  readonly added: readonly string[];
  readonly removed: readonly string[];
  /** Models kept whose settings changed (they get a new provider). */
  readonly changed: readonly string[];
  /** Plans whose limits changed. */
  readonly plans: readonly string[];
  /** Settings other than `models` and `plans` that differ: a reload does not apply them (they need a restart). */
  readonly needRestart: readonly string[];
};

/** What a reload applies; every other key of the config needs a restart. */
const reloadable = new Set(['models', 'plans']);
/** Not settings: where the config came from. */
const notSettings = new Set(['source', 'dataDirFrom']);
/** Figures made from another setting, named by it instead (`store.url`). */
const derived = new Set(['store.urlFrom']);

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The dotted paths of the leaves that differ (an array is one leaf). Names only: a value may be a secret. */
const differingPaths = (before: unknown, after: unknown, at: string): string[] => {
  if (isRecord(before) && isRecord(after)) {
    const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
    return [...keys].flatMap((key) => differingPaths(before[key], after[key], at === '' ? key : `${at}.${key}`));
  }
  return JSON.stringify(before) === JSON.stringify(after) || derived.has(at) ? [] : [at];
};

export const configChanges = (before: Config, after: Config): ConfigChanges => {
  const was = new Map(before.models.map((model) => [model.id, model]));
  const now = new Map(after.models.map((model) => [model.id, model]));
  const rest = (config: Config) =>
    Object.fromEntries(Object.entries(config).filter(([key]) => !reloadable.has(key) && !notSettings.has(key)));
  return {
    added: [...now.keys()].filter((id) => !was.has(id)),
    removed: [...was.keys()].filter((id) => !now.has(id)),
    changed: [...now.entries()]
      .filter(([id, model]) => was.has(id) && JSON.stringify(was.get(id)) !== JSON.stringify(model))
      .map(([id]) => id),
    plans: differingPaths(before.plans, after.plans, '')
      .map((path) => path.split('.')[0] ?? path)
      .filter((plan, index, all) => all.indexOf(plan) === index),
    needRestart: differingPaths(rest(before), rest(after), ''),
  };
};
