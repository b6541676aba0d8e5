/** The plans an account can be on, and what each allows. Numbers are defaults; the config file may override them. */
export const planNames = ['free', 'starter', 'scale', 'enterprise'] as const;
export type PlanName = (typeof planNames)[number];

export type PlanLimits = {
  /** Active (not revoked) API keys the account may hold; `null` is unlimited. */
  readonly maxKeys: number | null;
  readonly submitsPerMinute: number;
  readonly pollsPerMinute: number;
};

export type PlanTable = Readonly<Record<PlanName, PlanLimits>>;

export const defaultPlans: PlanTable = {
  free: { maxKeys: 1, submitsPerMinute: 60, pollsPerMinute: 600 },
  starter: { maxKeys: 3, submitsPerMinute: 600, pollsPerMinute: 6_000 },
  scale: { maxKeys: 10, submitsPerMinute: 3_000, pollsPerMinute: 30_000 },
  enterprise: { maxKeys: null, submitsPerMinute: 30_000, pollsPerMinute: 300_000 },
};

export const isPlanName = (value: string): value is PlanName => (planNames as readonly string[]).includes(value);
