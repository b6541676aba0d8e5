import { type PlanLimits, type PlanName, type PlanTable, planLimitsOf } from '../plans.js';

/**
 * An account's own limits (contract 21): each overrides its plan's limit of the same name; `allowedModels` (absent:
 * every model) bounds the models the account may use. Kept whole on the account; absent keys are the plan's.
 */
export type AccountLimits = Partial<PlanLimits> & { readonly allowedModels?: readonly string[] };

/** The keys an account's own limits may hold. */
export type AccountLimitKey = keyof AccountLimits;

/** A change of an account's own limits: a key set to a value overrides the plan's; set to `null`, the override is
 * removed (the plan's limit holds again); absent, the key is left as it is. */
export type AccountLimitsChange = { readonly [K in AccountLimitKey]?: AccountLimits[K] | null };

/** The limits an account is held to: its plan's, overridden key by key by its own; `own` names the overridden keys. */
export type EffectiveLimits = PlanLimits & {
  readonly allowedModels?: readonly string[];
  readonly own: readonly AccountLimitKey[];
};

/** The most model ids an account's `allowedModels` may list. */
export const maxAllowedModels = 1_000;

/** The account's own limits after `change` (absent when none is left). */
export const changeLimits = (
  current: AccountLimits | undefined,
  change: AccountLimitsChange,
): AccountLimits | undefined => {
  const next: Record<string, unknown> = { ...current };
  for (const [key, value] of Object.entries(change)) {
    if (value === undefined) continue;
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return Object.keys(next).length === 0 ? undefined : (next as AccountLimits);
};

/** Whether two accounts' own limits are the same (so a change that changes nothing appends nothing). */
export const sameLimits = (a: AccountLimits | undefined, b: AccountLimits | undefined): boolean =>
  JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

const canonical = (limits: AccountLimits | undefined) =>
  Object.entries(limits ?? {})
    .filter(([, value]) => value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : 1));

/** The limits the account is held to now: its plan's in `plans` (the config in force), overridden by its own. */
export const effectiveLimits = (
  plans: PlanTable,
  account: { readonly plan: PlanName; readonly limits?: AccountLimits | undefined },
): EffectiveLimits => {
  const own = account.limits;
  const base = planLimitsOf(plans, account.plan);
  if (own === undefined) return { ...base, own: [] };
  const keys = Object.keys(own).filter((key) => own[key as AccountLimitKey] !== undefined) as AccountLimitKey[];
  return { ...base, ...own, own: keys };
};

/** Whether the account may use `model`: a model it may not is, for it, a model that does not exist. */
export const allowsModel = (limits: Pick<EffectiveLimits, 'allowedModels'> | undefined, model: string): boolean =>
  limits?.allowedModels === undefined || limits.allowedModels.includes(model);
