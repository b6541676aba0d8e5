import { z } from 'zod';
import { accountLimitsChangeSchema } from '../../../app/accountLimitsSchema.js';

/**
 * The admin API's bodies and answers (product contract 21) as zod schemas: the routes parse with the body schemas
 * and the OpenAPI document (admin/openapi.ts) is generated from all of them. Every string a caller sends is bounded.
 */

/** A plan's name as the API takes it; today one of the configured plans (checked by the route). */
const planName = z
  .string()
  .regex(/^[a-z0-9-]{1,40}$/)
  .meta({
    description: 'A plan of the config: `free`, `starter`, `scale`, `enterprise` or one the config defines.',
    examples: ['starter'],
  });

const limitsChange = accountLimitsChangeSchema.meta({
  description:
    'The account’s own limits, each overriding its plan’s: any plan limit, `allowedModels`, `tokensPerMinute`, `tokensPerDay`, `tokensPerMonth`. `null` removes an override; a key left out stays as it is.',
});

export const adminAccountCreateSchema = z
  .object({
    email: z.string().min(1).max(254).meta({ description: 'The account holder’s email (unique).' }),
    plan: planName.optional().meta({ description: 'The account’s plan; `free` when absent.' }),
    limits: limitsChange.optional(),
  })
  .strict()
  .meta({ description: 'A new account.' });

export const adminAccountPatchSchema = z
  .object({
    plan: planName.optional(),
    limits: limitsChange.optional(),
    suspended: z
      .boolean()
      .optional()
      .meta({ description: '`true` suspends the account (its keys get `403`, its sessions end); `false` resumes it.' }),
  })
  .strict()
  .meta({ description: 'What to change; fields left out stay as they are.' });

export const adminKeyCreateSchema = z
  .object({
    name: z.string().max(400).optional().meta({ description: 'A name to tell the key by: 1 to 100 characters.' }),
    expires_at: z
      .number()
      .int()
      .positive()
      .max(253_402_300_799)
      .optional()
      .meta({ description: 'When the key stops working (Unix seconds, in the future); absent: never.' }),
  })
  .strict()
  .meta({ description: 'A new API key of the account.' });

const unixSeconds = (description: string) => z.number().int().nonnegative().meta({ description });
const accountId = z.string().regex(/^acct_[A-Za-z0-9_-]{16}$/);
const keyId = z.string().regex(/^key_[A-Za-z0-9_-]{16}$/);

export const adminAccountSchema = z
  .object({
    object: z.literal('account'),
    id: accountId,
    email: z.string(),
    plan: z.string(),
    suspended: z.boolean(),
    created_at: unixSeconds('When the account was made (Unix seconds).'),
    active_keys: z.number().int().nonnegative(),
    limits: z
      .record(z.string(), z.unknown())
      .nullable()
      .meta({ description: 'The account’s own limits overriding its plan’s; `null` when it has none.' }),
  })
  .meta({ description: 'An account.' });

export const adminAccountListSchema = z
  .object({
    object: z.literal('list'),
    data: z.array(adminAccountSchema),
    has_more: z.boolean(),
    last_id: accountId.nullable().meta({ description: 'The last account of the page: the next page’s `after`.' }),
  })
  .meta({ description: 'Accounts by id.' });

export const adminKeySchema = z
  .object({
    object: z.literal('api_key'),
    id: keyId,
    account_id: accountId,
    name: z.string().nullable(),
    prefix: z
      .string()
      .meta({ description: 'The start of the key (`sk_` and 8 characters): enough to tell keys apart.' }),
    created_at: unixSeconds('When the key was made (Unix seconds).'),
    revoked_at: z.number().int().nonnegative().nullable().meta({ description: 'When it was revoked, if it was.' }),
    expires_at: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .meta({ description: 'When it stops working (Unix seconds), if it does.' }),
  })
  .meta({ description: 'An account’s API key (never the key itself).' });

export const adminCreatedKeySchema = adminKeySchema
  .extend({
    key: z
      .string()
      .regex(/^sk_[A-Za-z0-9_-]{43}$/)
      .meta({ description: 'The key: shown this once only.' }),
  })
  .meta({ description: 'A new API key, with the key itself: store it now.' });

export const adminKeyListSchema = z
  .object({ object: z.literal('list'), data: z.array(adminKeySchema) })
  .meta({ description: 'The account’s keys, revoked ones too.' });

export type AdminAccountJson = z.infer<typeof adminAccountSchema>;
export type AdminKeyJson = z.infer<typeof adminKeySchema>;
