import type { ServiceTier } from './serviceTier.js';

/**
 * The plans an account can be on, and what each allows. The four built-in plans are always there with these
 * defaults; the config file may override them and define plans of any other name (`planNamePattern`).
 */
export const planNames = ['free', 'starter', 'scale', 'enterprise'] as const;
export type BuiltInPlanName = (typeof planNames)[number];
/** A plan's name: one of the four, or one the config file defines. */
export type PlanName = string;
/** What a plan's name may be (the config's `plans` keys). */
export const planNamePattern = /^[a-z0-9-]{1,40}$/;
/** The plan whose limits an account on a plan the config no longer defines is held to (docs/decisions.md). */
export const fallbackPlan: BuiltInPlanName = 'free';

export type PlanLimits = {
  /** Active (not revoked) API keys the account may hold; `null` is unlimited. */
  readonly maxKeys: number | null;
  readonly submitsPerMinute: number;
  readonly pollsPerMinute: number;
  /** Requests the account may have waiting or being processed at once (contract 15); beyond, submits are refused. */
  readonly maxQueued: number;
  /** Streams, waiting creates and long polls the account may hold open at once in one server process (contract 18);
   * beyond, such a call answers `429`. */
  readonly maxOpenCalls: number;
  /** Requests of the account being processed at once, in all processes and nodes (contract 18); `null`: no bound. */
  readonly maxProcessing: number | null;
  /** Batches of the account not ended (validating, in progress, finalizing...) at once (contract 16). */
  readonly maxBatchesInProgress: number;
  /** Bytes of files (uploads and batch outputs) the account may keep stored at once (contract 16). */
  readonly maxFileStorageBytes: number;
  /** Files (uploads and batch outputs) the account may keep at once; beyond, uploads are refused (a batch's own output
   * files are counted, never refused): what bounds the rows an account's list of files can hold. */
  readonly maxFiles: number;
  /** Uploads of the account streaming at once, in all processes and nodes; beyond, an upload answers `429`. */
  readonly maxConcurrentUploads: number;
  /** Webhook endpoints the account may have (enabled or disabled, not removed) at once (issue 30). */
  readonly maxWebhookEndpoints: number;
  /** Tokens (input and output) of the account's requests that ended in the last 60 s at which submits answer `429
   * rate_limited` (contract 21); `null`: no limit. */
  readonly tokensPerMinute: number | null;
  /** Tokens of the account's requests that ended this UTC day at which submits answer `429 insufficient_quota`. */
  readonly tokensPerDay: number | null;
  /** Tokens of the account's requests that ended this calendar month (UTC) at which submits answer `429
   * insufficient_quota`. */
  readonly tokensPerMonth: number | null;
  /** The service tiers its requests may be served at (contract 20); a tier beyond them is served at the best one
   * below it (serviceTier.ts). */
  readonly serviceTiers: readonly ServiceTier[];
  /** The tier of a request that asks for `auto` or none. */
  readonly defaultServiceTier: ServiceTier;
};

/** The plan limits that are numbers or `null` (unbounded), as opposed to those that are always a number. */
export const nullablePlanLimits = [
  'maxKeys',
  'maxProcessing',
  'tokensPerMinute',
  'tokensPerDay',
  'tokensPerMonth',
] as const;

/** The plans in force: the four built-in ones always, and any the config defines. */
export type PlanTable = Readonly<Record<BuiltInPlanName, PlanLimits>> &
  Readonly<Record<string, PlanLimits | undefined>>;

export const defaultPlans: PlanTable = {
  free: {
    maxKeys: 1,
    submitsPerMinute: 60,
    pollsPerMinute: 600,
    maxQueued: 100,
    maxOpenCalls: 10,
    maxProcessing: 4,
    maxBatchesInProgress: 2,
    maxFileStorageBytes: 1024 ** 3,
    maxFiles: 1_000,
    maxConcurrentUploads: 2,
    maxWebhookEndpoints: 1,
    tokensPerMinute: null,
    tokensPerDay: null,
    tokensPerMonth: null,
    serviceTiers: ['default', 'flex'],
    defaultServiceTier: 'default',
  },
  starter: {
    maxKeys: 3,
    submitsPerMinute: 600,
    pollsPerMinute: 6_000,
    maxQueued: 1_000,
    maxOpenCalls: 50,
    maxProcessing: 16,
    maxBatchesInProgress: 10,
    maxFileStorageBytes: 10 * 1024 ** 3,
    maxFiles: 10_000,
    maxConcurrentUploads: 4,
    maxWebhookEndpoints: 3,
    tokensPerMinute: null,
    tokensPerDay: null,
    tokensPerMonth: null,
    serviceTiers: ['default', 'flex'],
    defaultServiceTier: 'default',
  },
  scale: {
    maxKeys: 10,
    submitsPerMinute: 3_000,
    pollsPerMinute: 30_000,
    maxQueued: 10_000,
    maxOpenCalls: 200,
    maxProcessing: 64,
    maxBatchesInProgress: 50,
    maxFileStorageBytes: 100 * 1024 ** 3,
    maxFiles: 100_000,
    maxConcurrentUploads: 16,
    maxWebhookEndpoints: 10,
    tokensPerMinute: null,
    tokensPerDay: null,
    tokensPerMonth: null,
    serviceTiers: ['default', 'flex', 'priority'],
    defaultServiceTier: 'default',
  },
  enterprise: {
    maxKeys: null,
    submitsPerMinute: 30_000,
    pollsPerMinute: 300_000,
    maxQueued: 100_000,
    maxOpenCalls: 1_000,
    maxProcessing: null,
    maxBatchesInProgress: 200,
    maxFileStorageBytes: 1024 ** 4,
    maxFiles: 1_000_000,
    maxConcurrentUploads: 64,
    maxWebhookEndpoints: 50,
    tokensPerMinute: null,
    tokensPerDay: null,
    tokensPerMonth: null,
    serviceTiers: ['default', 'flex', 'priority'],
    defaultServiceTier: 'default',
  },
};

/** Whether `value` names a plan of the table (a built-in one or one the config defines). */
export const isPlanName = (plans: PlanTable, value: string): boolean =>
  Object.hasOwn(plans, value) && plans[value] !== undefined;

/** A plan's limits; a plan the table does not define (removed from the config since) is held to `fallbackPlan`'s. */
export const planLimitsOf = (plans: PlanTable, plan: PlanName): PlanLimits =>
  (Object.hasOwn(plans, plan) ? plans[plan] : undefined) ?? plans[fallbackPlan];

/**
 * Each plan's bound of requests being processed at once (`null`: none), as a claim takes it. A plan absent from it (no
 * longer in the config) is held to `fallbackPlan`'s bound, as everywhere else.
 */
export const maxProcessingByPlan = (plans: PlanTable): Record<string, number | null> => {
  const bounds: Record<string, number | null> = {};
  for (const [name, limits] of Object.entries(plans)) if (limits !== undefined) bounds[name] = limits.maxProcessing;
  return bounds;
};
