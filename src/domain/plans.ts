/** The plans an account can be on, and what each allows. Numbers are defaults; the config file may override them. */
export const planNames = ['free', 'starter', 'scale', 'enterprise'] as const;
export type PlanName = (typeof planNames)[number];

export type PlanLimits = {
  /** Active (not revoked) API keys the account may hold; `null` is unlimited. */
  readonly maxKeys: number | null;
  readonly submitsPerMinute: number;
  readonly pollsPerMinute: number;
  /** Requests the account may have waiting or being processed at once (contract 15); beyond, submits are refused. */
  readonly maxQueued: number;
};

export type PlanTable = Readonly<Record<PlanName, PlanLimits>>;

export const defaultPlans: PlanTable = {
  free: { maxKeys: 1, submitsPerMinute: 60, pollsPerMinute: 600, maxQueued: 100 },
  starter: { maxKeys: 3, submitsPerMinute: 600, pollsPerMinute: 6_000, maxQueued: 1_000 },
  scale: { maxKeys: 10, submitsPerMinute: 3_000, pollsPerMinute: 30_000, maxQueued: 10_000 },
  enterprise: { maxKeys: null, submitsPerMinute: 30_000, pollsPerMinute: 300_000, maxQueued: 100_000 },
};

export const isPlanName = (value: string): value is PlanName => (planNames as readonly string[]).includes(value);
