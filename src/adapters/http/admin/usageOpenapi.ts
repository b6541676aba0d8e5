import { z } from 'zod';
import { bucketLimits } from '../../../domain/usage/usagePage.js';
import { maxUsageFilterIdChars, maxUsageFilterIds, maxUsageTime } from './usageRoute.js';

/*
 * The OpenAPI entry of `GET /v1/admin/usage` (contract 21), to merge into openapi.ts's `paths` (`usagePathItem`) and
 * its `components.schemas` (`usageSchemas`). The page's schema is the zod schema below, the shape usagePage gives.
 */

const usageResultSchema = z.object({
  object: z.literal('organization.usage.completions.result'),
  input_tokens: z.number().int().min(0),
  output_tokens: z.number().int().min(0),
  num_model_requests: z.number().int().min(0),
  account_id: z.string().nullable().describe('The account, when grouped by `account_id`; else null.'),
  model: z.string().nullable().describe('The model, when grouped by `model`; else null.'),
});

export const usagePageSchema = z.object({
  object: z.literal('page'),
  data: z.array(
    z.object({
      object: z.literal('bucket'),
      start_time: z.number().int().describe('The bucket’s start (Unix seconds, on the UTC grid of its width).'),
      end_time: z.number().int().describe('The bucket’s end (Unix seconds, exclusive).'),
      results: z.array(usageResultSchema),
    }),
  ),
  has_more: z.boolean(),
  next_page: z.string().nullable().describe('The cursor of the next page (`page=`), when `has_more`.'),
});

const jsonSchemaOf = (schema: z.ZodType) => {
  const { $schema: _, ...rest } = z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'throw' });
  return rest;
};

export const usageSchemas = { UsagePage: jsonSchemaOf(usagePageSchema) };

const query = (name: string, description: string, schema: Record<string, unknown>, required = false) => ({
  name,
  in: 'query',
  required,
  description,
  schema,
});

const idList = (what: string) =>
  query(
    what,
    `Only these (repeated, \`${what}[]=\` or comma separated; at most ${maxUsageFilterIds}, each at most ${maxUsageFilterIdChars} characters).`,
    {
      type: 'array',
      items: { type: 'string', minLength: 1, maxLength: maxUsageFilterIdChars },
      maxItems: maxUsageFilterIds,
    },
  );

const errorContent = { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } };

export const usagePathItem = {
  '/v1/admin/usage': {
    get: {
      operationId: 'getUsage',
      summary: 'Tokens and completed requests per time bucket, account and model (OpenAI’s usage API shape)',
      description:
        'Buckets snap to the UTC grid of their width; buckets without use are left out; `limit` counts buckets with ' +
        'use. Counts completed requests only (a failed or cancelled request has no usage). Admin keys only.',
      tags: ['Admin'],
      security: [{ adminKey: [] }],
      parameters: [
        query(
          'start_time',
          'Start (Unix seconds, inclusive; snapped down to its bucket).',
          { type: 'integer', minimum: 0, maximum: maxUsageTime },
          true,
        ),
        query('end_time', 'End (Unix seconds, exclusive); absent: none.', {
          type: 'integer',
          minimum: 1,
          maximum: maxUsageTime,
        }),
        query('bucket_width', 'Width of each bucket.', { type: 'string', enum: ['1h', '1d'], default: '1d' }),
        query('group_by', 'Group each bucket’s results by these (absent: one result per bucket).', {
          type: 'array',
          items: { type: 'string', enum: ['account_id', 'model'] },
          maxItems: 2,
        }),
        query(
          'limit',
          `Buckets per page: 1d default ${bucketLimits['1d'].default}, at most ${bucketLimits['1d'].max}; 1h default ${bucketLimits['1h'].default}, at most ${bucketLimits['1h'].max}.`,
          { type: 'integer', minimum: 1, maximum: bucketLimits['1h'].max },
        ),
        query('page', 'A cursor: the `next_page` of the previous page (same other parameters).', {
          type: 'string',
          maxLength: 64,
        }),
        idList('account_ids'),
        idList('models'),
      ],
      responses: {
        '200': {
          description: 'A page of buckets.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/UsagePage' } } },
        },
        '400': {
          description: 'A parameter missing, unknown or out of its bounds (`details.param` names it).',
          content: errorContent,
        },
        '401': { description: 'No admin key, or an unknown or revoked one.', content: errorContent },
        '403': { description: 'An account key (admin routes take admin keys only).', content: errorContent },
      },
    },
  },
};
