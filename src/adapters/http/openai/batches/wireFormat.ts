import { z } from 'zod';
import { responsesUsageSchema } from '../responseObjectSchema.js';

/**
 * OpenAI's Files and Batches objects as airs answers them (product contract section 16), as zod schemas: the File,
 * the deleted File, the Batch and their lists. The OpenAPI document (adapters/http/openapi.ts) is generated from them;
 * its type checks keep them in step with what adapters/http/openai/batches/wire.ts really sends. (The create body is
 * the route's own schema: adapters/http/openai/batches/bodies.ts.)
 */

const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });
const secondsOrNull = seconds.nullable().meta({ description: 'Unix time in seconds; null until it happens.' });

const fileId = z
  .string()
  .regex(/^file-[A-Za-z0-9_-]{22,}$/)
  .meta({ description: 'A file’s id (`file-…`).' });

/** The purposes a file may have: `batch` (an upload), `batch_output` (a batch's output or error file). */
export const filePurposes = ['batch', 'batch_output'] as const;

export const fileObjectSchema = z
  .looseObject({
    id: fileId,
    object: z.literal('file'),
    bytes: z.int().min(0),
    created_at: seconds,
    filename: z.string().meta({ description: 'As uploaded; `<batch id>_output.jsonl` or `_error.jsonl` for outputs.' }),
    purpose: z.enum(filePurposes),
    status: z
      .literal('processed')
      .meta({ description: 'Always `processed`: the `200` of an upload comes once stored.' }),
    expires_at: secondsOrNull.meta({ description: 'When the file expires (Unix seconds); null: never.' }),
    status_details: z.null(),
  })
  .meta({ description: 'A stored file (OpenAI’s File object).' });

export const fileDeletedSchema = z
  .looseObject({ id: fileId, object: z.literal('file'), deleted: z.literal(true) })
  .meta({ description: 'A deleted file.' });

/** A page of a list as OpenAI's lists show it (adapters/http/openai/batches/wire.ts, listOf). */
const listOfSchema = <T extends z.ZodType>(item: T, description: string) =>
  z
    .looseObject({
      object: z.literal('list'),
      data: z.array(item),
      first_id: z.string().nullable().meta({ description: 'The first item’s id; null for an empty page.' }),
      last_id: z.string().nullable().meta({ description: 'The last item’s id: the next page’s `after`.' }),
      has_more: z.boolean(),
    })
    .meta({ description });

export const fileListSchema = listOfSchema(fileObjectSchema, 'A page of the account’s files.');

/** The statuses a Batch shows (`expiring` and `failing` are shown as `in_progress` until the batch ends). */
export const batchStatuses = [
  'validating',
  'in_progress',
  'finalizing',
  'completed',
  'failed',
  'expired',
  'cancelling',
  'cancelled',
] as const;

/**
 * The codes of a failed batch's `errors.data`: its lines' (app/batches/lineRules.ts, LineError), and `batch_failed`
 * for a step of its housekeeping that failed for good (domain/batch/machine.ts).
 */
export const batchLineErrorCodes = [
  'invalid_json',
  'invalid_custom_id',
  'duplicate_custom_id',
  'invalid_method',
  'invalid_url',
  'invalid_request',
  'too_many_lines',
  'empty_file',
  'batch_failed',
] as const;

const batchLineError = z.looseObject({
  code: z.enum(batchLineErrorCodes),
  line: z
    .int()
    .min(1)
    .nullable()
    .meta({ description: 'The line (1-based; blank lines skipped); null: the whole file.' }),
  message: z.string(),
  param: z
    .string()
    .nullable()
    .meta({ description: '`custom_id`, `method`, `url` or `body.<field>`, where it applies.' }),
});

export const batchObjectSchema = z
  .looseObject({
    id: z
      .string()
      .regex(/^batch_[A-Za-z0-9_-]{22,}$/)
      .meta({ description: 'A batch’s id (`batch_…`).' }),
    object: z.literal('batch'),
    endpoint: z.string().meta({ description: 'The route every line is for.' }),
    model: z.string().nullable().meta({ description: 'The model, when every line names the same one; else null.' }),
    errors: z
      .looseObject({ object: z.literal('list'), data: z.array(batchLineError) })
      .nullable()
      .meta({ description: 'When validation failed: one entry per bad line (at most 1,000); else null.' }),
    input_file_id: z.string(),
    completion_window: z.string(),
    status: z.enum(batchStatuses).meta({
      description:
        '`validating` → `in_progress` → `finalizing` → `completed`; `validating` → `failed`; `in_progress` → ' +
        '`expired`; `validating` | `in_progress` → `cancelling` → `cancelled`.',
    }),
    output_file_id: z.string().nullable().meta({ description: 'Completed lines (`batch_output`); null when none.' }),
    error_file_id: z.string().nullable().meta({ description: 'Lines that did not complete; null when none.' }),
    created_at: seconds,
    in_progress_at: secondsOrNull,
    expires_at: secondsOrNull,
    finalizing_at: secondsOrNull,
    completed_at: secondsOrNull,
    failed_at: secondsOrNull,
    expired_at: secondsOrNull,
    cancelling_at: secondsOrNull,
    cancelled_at: secondsOrNull,
    request_counts: z
      .object({ total: z.int().min(0), completed: z.int().min(0), failed: z.int().min(0) })
      .meta({ description: 'Exact at every read; `completed + failed = total` once ended.' }),
    usage: responsesUsageSchema.meta({
      description: 'The lines’ tokens summed; airs knows no cached or reasoning tokens.',
    }),
    metadata: z.record(z.string(), z.string()).nullable().meta({ description: 'As the create gave it.' }),
  })
  .meta({ description: 'A batch (OpenAI’s Batch object).' });

export const batchListSchema = listOfSchema(batchObjectSchema, 'A page of the account’s batches, newest first.');
