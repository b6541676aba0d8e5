import { z } from 'zod';
import { usagePage } from '../../../app/usage.js';
import { InvalidRequest } from '../../../domain/errors.js';
import {
  bucketLimits,
  bucketStartOf,
  bucketWidthMs,
  decodeCursor,
  type UsageAsk,
  type UsageGroupBy,
  type UsagePage,
} from '../../../domain/usage/usagePage.js';
import type { ReadModel } from '../../../ports/Store.js';
import { isApiError } from '../errorResponse.js';

/*
 * `GET /v1/admin/usage` (contract 21): OpenAI's usage API (`/v1/organization/usage/completions`) over the hourly
 * usage view. Mounted behind the admin guard (admin keys only). Every parameter is bounded; a list parameter may be
 * repeated (`group_by=model&group_by=account_id`), bracketed (`group_by[]=model`) or comma separated.
 */

/** The latest time the API takes (9999-12-31T23:59:59Z, Unix seconds). */
export const maxUsageTime = 253_402_300_799;
/** Most ids one of `account_ids` and `models` may list, and their longest. */
export const maxUsageFilterIds = 100;
export const maxUsageFilterIdChars = 200;

const unixSeconds = z
  .string()
  .regex(/^\d{1,12}$/, 'must be a whole number of seconds since 1970 (Unix time)')
  .transform(Number)
  .refine((at) => at <= maxUsageTime, `must be at most ${maxUsageTime} (the end of the year 9999)`);

const idList = z
  .array(
    z
      .string()
      .min(1, 'must not be empty')
      .max(maxUsageFilterIdChars, `must be at most ${maxUsageFilterIdChars} characters`),
  )
  .max(maxUsageFilterIds, `must list at most ${maxUsageFilterIds} ids`);

/** The usage API's query, each list parameter gathered into an array first (`listsOf`). */
export const usageQuerySchema = z
  .object({
    start_time: unixSeconds,
    end_time: unixSeconds.optional(),
    bucket_width: z.enum(['1h', '1d'], { error: 'must be 1h or 1d' }).default('1d'),
    group_by: z
      .array(z.enum(['account_id', 'model'], { error: 'must be account_id, model or both' }))
      .max(2, 'lists account_id and model at most once each')
      .default([]),
    limit: z
      .string()
      .regex(/^\d{1,4}$/, 'must be a whole number')
      .transform(Number)
      .optional(),
    page: z.string().max(64, 'is not a page cursor this server gave').optional(),
    account_ids: idList.optional(),
    models: idList.optional(),
  })
  .strict();

export type UsageQuery = z.input<typeof usageQuerySchema>;

const listParams = new Set(['group_by', 'account_ids', 'models']);
/** Most query parameters (with repeats) a usage request may carry. */
const maxParams = 2 * maxUsageFilterIds + 16;

const invalid = (param: string, message: string) =>
  new InvalidRequest({ message: `${param} ${message}`, details: { param } });

/** The query as the schema reads it: list parameters as arrays (repeated, bracketed or comma separated), the others
 * as their last value. */
const listsOf = (query: Record<string, unknown>): Record<string, unknown> | InvalidRequest => {
  const out: Record<string, unknown> = {};
  let count = 0;
  for (const [rawName, raw] of Object.entries(query)) {
    const name = rawName.endsWith('[]') ? rawName.slice(0, -2) : rawName;
    const values = (Array.isArray(raw) ? raw : [raw]).map(String);
    count += values.length;
    if (count > maxParams) return invalid('query', `has more than ${maxParams} parameters`);
    if (listParams.has(name)) {
      const items = values.flatMap((value) => value.split(',')).filter((item) => item !== '');
      out[name] = [...((out[name] as string[] | undefined) ?? []), ...items];
    } else out[name] = values.at(-1);
  }
  return out;
};

/** What the usage API is asked, checked; or a 400 naming the parameter. */
export const parseUsageQuery = (query: Record<string, unknown>): UsageAsk | InvalidRequest => {
  const gathered = listsOf(query);
  if (isApiError(gathered)) return gathered;
  const parsed = usageQuerySchema.safeParse(gathered);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    if (issue?.code === 'unrecognized_keys')
      return invalid(issue.keys[0] ?? 'query', 'is not a parameter of the usage API');
    const param = String(issue?.path[0] ?? 'query');
    const message =
      issue?.code === 'invalid_type' && issue.input === undefined ? 'is required' : (issue?.message ?? 'is invalid');
    return invalid(param, message);
  }
  const q = parsed.data;
  const width = q.bucket_width;
  const bounds = bucketLimits[width];
  const limit = q.limit ?? bounds.default;
  if (limit < 1 || limit > bounds.max)
    return invalid('limit', `must be between 1 and ${bounds.max} for bucket_width ${width}`);
  if (new Set(q.group_by).size !== q.group_by.length)
    return invalid('group_by', 'lists account_id and model at most once each');
  const startMs = q.start_time * 1000;
  const endMs = q.end_time === undefined ? undefined : q.end_time * 1000;
  if (endMs !== undefined && endMs <= startMs) return invalid('end_time', 'must be after start_time');
  let fromMs: number | undefined;
  if (q.page !== undefined) {
    fromMs = decodeCursor(q.page);
    const first = bucketStartOf(startMs, width);
    if (
      fromMs === undefined ||
      fromMs % bucketWidthMs[width] !== 0 ||
      fromMs < first ||
      (endMs !== undefined && fromMs >= endMs)
    )
      return invalid('page', 'is not a page cursor this server gave for this query');
  }
  return {
    startMs,
    endMs,
    width,
    groupBy: q.group_by as UsageGroupBy[],
    limit,
    fromMs,
    accountIds: q.account_ids,
    models: q.models,
  };
};

/** The route's work: the page for a query, or a 400 in the contract's error shape (as a value). */
export const usageRoute = async (
  query: Record<string, unknown>,
  services: { readonly reads: Pick<ReadModel, 'usageRows'> },
): Promise<UsagePage | InvalidRequest> => {
  const ask = parseUsageQuery(query);
  if (isApiError(ask)) return ask;
  return usagePage(services.reads, ask);
};
