import { z } from 'zod';
import { planLimitFields } from '../configFile.js';
import type { AccountLimitsChange } from '../domain/account/limits.js';
import { maxAllowedModels } from '../domain/account/limits.js';

/** The longest model id `allowedModels` may name (a model's id is shown on one line). */
export const maxAllowedModelIdLength = 200;
/** The most bytes of a limits change's JSON, as the CLI reads it (the admin API bounds its bodies itself). */
export const maxLimitsJsonBytes = 256 * 1024;

const nullable = <T extends z.ZodType>(schema: z.ZodOptional<T>) => schema.unwrap().nullable().optional();

/**
 * A change of an account's own limits (`airs accounts set-limits ID --json '{…}'`, and the admin API's `limits`):
 * any of the plan limits, plus `allowedModels`; each key set overrides the plan's, `null` removes the override (the
 * plan's holds again), a key left out stays as it is. Bounded: known keys only, at most 1,000 model ids of at most
 * 200 characters, without control characters.
 */
export const accountLimitsChangeSchema = z.strictObject({
  maxKeys: nullable(planLimitFields.maxKeys),
  submitsPerMinute: nullable(planLimitFields.submitsPerMinute),
  pollsPerMinute: nullable(planLimitFields.pollsPerMinute),
  maxQueued: nullable(planLimitFields.maxQueued),
  maxOpenCalls: nullable(planLimitFields.maxOpenCalls),
  maxProcessing: nullable(planLimitFields.maxProcessing),
  maxBatchesInProgress: nullable(planLimitFields.maxBatchesInProgress),
  maxFileStorageBytes: nullable(planLimitFields.maxFileStorageBytes),
  maxFiles: nullable(planLimitFields.maxFiles),
  maxConcurrentUploads: nullable(planLimitFields.maxConcurrentUploads),
  maxWebhookEndpoints: nullable(planLimitFields.maxWebhookEndpoints),
  tokensPerMinute: nullable(planLimitFields.tokensPerMinute),
  tokensPerDay: nullable(planLimitFields.tokensPerDay),
  tokensPerMonth: nullable(planLimitFields.tokensPerMonth),
  allowedModels: z
    .array(
      z
        .string()
        .min(1)
        .max(maxAllowedModelIdLength)
        .regex(/^\P{Cc}*$/u, 'must not contain control characters'),
    )
    .max(maxAllowedModels)
    .nullable()
    .optional(),
}) satisfies z.ZodType<AccountLimitsChange>;

/** The problem with a limits change, in one line, or the change. */
export const parseLimitsChange = (value: unknown): AccountLimitsChange | string => {
  const parsed = accountLimitsChangeSchema.safeParse(value);
  if (parsed.success) return parsed.data as AccountLimitsChange;
  return parsed.error.issues
    .map((issue) => `${issue.path.length === 0 ? 'limits' : issue.path.join('.')}: ${issue.message}`)
    .join('; ');
};
