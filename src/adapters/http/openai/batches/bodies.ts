import { z } from 'zod';

/**
 * The `POST /v1/batches` body (contract 16), the one description the route checks and the OpenAPI document shows.
 * `metadata` is checked by the face's metadata rules after (metadata.ts), as for a Response.
 */
export const batchCreateBodySchema = z
  .object(
    {
      input_file_id: z.string({ error: 'input_file_id must be the id of a file uploaded with purpose batch' }),
      endpoint: z.string({ error: 'endpoint must be /v1/chat/completions or /v1/responses' }),
      completion_window: z.string({ error: 'completion_window must be "24h"' }),
      metadata: z.unknown().optional(),
      output_expires_after: z
        .object(
          {
            anchor: z.literal('created_at', { error: 'output_expires_after.anchor must be "created_at"' }),
            seconds: z
              .number({ error: 'output_expires_after.seconds must be a number of seconds' })
              .int({ error: 'output_expires_after.seconds must be a whole number of seconds' })
              .min(3_600, { error: 'output_expires_after.seconds must be at least 3600 (one hour)' })
              .max(2_592_000, { error: 'output_expires_after.seconds must be at most 2592000 (30 days)' }),
          },
          { error: 'output_expires_after must be {"anchor": "created_at", "seconds": N}' },
        )
        .nullish(),
    },
    { error: 'the body must be a JSON object with input_file_id, endpoint and completion_window' },
  )
  .meta({ description: 'A batch to run: a JSONL file of requests to one endpoint.' });

/** Which field a refusal names (`param`), from the schema's path. */
export const paramOf = (path: readonly PropertyKey[]): string | undefined =>
  path.length === 0 ? undefined : path.map(String).join('.');
