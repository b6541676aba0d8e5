import { z } from 'zod';
import { completionWindows } from '../../../../app/batches/Batches.js';
import { metadataRefusal, metadataSchema } from '../metadataSchema.js';

/** The routes a batch's lines may be for (batchEndpoints.ts runs them). */
export const batchEndpointPaths = ['/v1/chat/completions', '/v1/responses'] as const;

/** An expiry asked for, of an upload (`expires_after`) or of a batch's output (`output_expires_after`): OpenAI's. */
export const expiresAfterBounds = { minSeconds: 3_600, maxSeconds: 2_592_000 } as const;

const shownGiven = (input: unknown, chars: number) =>
  typeof input === 'string' ? `; got ${JSON.stringify(input.slice(0, chars))}` : '';

/**
 * The `POST /v1/batches` body (contract 16), the one description the route checks and the OpenAPI document shows
 * (`BatchCreate`). `metadata` is bounded by the face's metadata rules (metadataRefusal), as for a Response.
 */
export const batchCreateBodySchema = z
  .object(
    {
      input_file_id: z
        .string({ error: 'input_file_id must be the id of a file uploaded with purpose batch' })
        .meta({ description: 'A file uploaded with `purpose: "batch"`: JSONL, one request a line.' }),
      endpoint: z
        .enum(batchEndpointPaths, {
          error: (issue) => `endpoint must be one of ${batchEndpointPaths.join(', ')}${shownGiven(issue.input, 100)}`,
        })
        .meta({ description: 'The route every line is for; each line’s `url` must be it.' }),
      completion_window: z.enum(completionWindows, {
        error: (issue) => `completion_window must be "24h"${shownGiven(issue.input, 50)}`,
      }),
      metadata: z
        .preprocess((value, payload) => {
          const refusal = value === undefined || value === null ? undefined : metadataRefusal(value);
          if (refusal !== undefined)
            payload.addIssue({ code: 'custom', message: `metadata: ${refusal}`, input: value });
          return value;
        }, metadataSchema.nullish())
        .meta({
          description:
            'Up to 16 pairs; keys at most 64 characters, values strings of at most 512, without control characters ' +
            '(400 naming `metadata` beyond). Shown in the Batch.',
        }),
      output_expires_after: z
        .object(
          {
            anchor: z.literal('created_at', { error: 'output_expires_after.anchor must be "created_at"' }),
            seconds: z
              .number({ error: 'output_expires_after.seconds must be a number of seconds' })
              .int({ error: 'output_expires_after.seconds must be a whole number of seconds' })
              .min(expiresAfterBounds.minSeconds, {
                error: 'output_expires_after.seconds must be at least 3600 (one hour)',
              })
              .max(expiresAfterBounds.maxSeconds, {
                error: 'output_expires_after.seconds must be at most 2592000 (30 days)',
              }),
          },
          { error: 'output_expires_after must be {"anchor": "created_at", "seconds": N}' },
        )
        .nullish()
        .meta({
          description: 'When the output and error files expire (default: `batches.outputExpiresAfterSeconds`).',
        }),
    },
    { error: 'the body must be a JSON object with input_file_id, endpoint and completion_window' },
  )
  .meta({ description: 'A batch to run: a JSONL file of requests to one endpoint.' });

/** Which field a refusal names (`param`), from the schema's path. */
export const paramOf = (path: readonly PropertyKey[]): string | undefined =>
  path.length === 0 ? undefined : path.map(String).join('.');
