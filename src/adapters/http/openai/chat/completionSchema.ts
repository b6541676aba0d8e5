import { z } from 'zod';
import { servedTierField } from '../../../../app/serviceTierField.js';

/** The answer of `POST /v1/chat/completions` as zod schemas: the `chat.completion` and its stream's chunks. */

const completionId = z
  .string()
  .regex(/^chatcmpl-[A-Za-z0-9_-]{22,}$/)
  .meta({
    description: 'The request’s id under OpenAI’s prefix: `chatcmpl-X` is the request `req_X` of `/v1/ai`.',
  });

const seconds = z.int().min(0).meta({ description: 'Unix time in seconds.' });

/** A call of a function tool, as the answer shows it (the model's, as the upstream gave it). */
const answeredToolCall = z
  .looseObject({
    id: z.string().min(1),
    type: z.literal('function'),
    function: z.looseObject({
      name: z.string().min(1),
      arguments: z.string().meta({ description: 'JSON text, as the model wrote it.' }),
    }),
  })
  .meta({ description: 'A call of a function tool.' });

const finishReason = z.enum(['stop', 'length', 'tool_calls', 'content_filter']);

export const chatUsageSchema = z
  .looseObject({
    prompt_tokens: z.int().min(0),
    completion_tokens: z.int().min(0),
    total_tokens: z.int().min(0),
  })
  .meta({
    description:
      'Tokens read and written: the upstream’s figures for `openai` models; for `echo`, whitespace-separated words ' +
      'of the prompt and of the answer.',
  });

/** A completed request as a `chat.completion`. */
export const chatCompletionSchema = z
  .looseObject({
    id: completionId,
    object: z.literal('chat.completion'),
    created: seconds,
    model: z.string(),
    choices: z
      .array(
        z.looseObject({
          index: z.literal(0),
          message: z.looseObject({
            role: z.literal('assistant'),
            content: z.string().nullable().meta({ description: 'The text; null when the model only calls tools.' }),
            refusal: z.null(),
            tool_calls: z.array(answeredToolCall).optional(),
          }),
          finish_reason: finishReason,
          logprobs: z.null(),
        }),
      )
      .length(1),
    usage: chatUsageSchema.nullable().optional().meta({ description: 'Absent when the model did not tell it.' }),
    service_tier: servedTierField,
  })
  .meta({ description: 'OpenAI’s chat completion, as the SDKs read it.' });

const toolCallDelta = z.looseObject({
  index: z.int().min(0),
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string().optional(), arguments: z.string().optional() }).optional(),
});

/** One event of a chat completion stream. */
export const chatCompletionChunkSchema = z
  .looseObject({
    id: completionId,
    object: z.literal('chat.completion.chunk'),
    created: seconds,
    model: z.string(),
    choices: z
      .array(
        z.looseObject({
          index: z.literal(0),
          delta: z.looseObject({
            role: z.literal('assistant').optional(),
            content: z.string().nullable().optional(),
            tool_calls: z.array(toolCallDelta).optional(),
          }),
          finish_reason: finishReason.nullable(),
          logprobs: z.null().optional(),
        }),
      )
      .max(1)
      .meta({ description: 'One choice; none in the last chunk that carries `usage`.' }),
    usage: chatUsageSchema.nullable().optional().meta({
      description: 'In the last chunk, when `stream_options.include_usage` is true.',
    }),
  })
  .meta({ description: 'A `chat.completion.chunk`: `data: <this>`; the stream ends with `data: [DONE]`.' });
