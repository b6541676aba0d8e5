import { z } from 'zod';
import { outputItem, outputText, responseObjectSchema } from './responseObjectSchema.js';

/** The events of a Response stream (`stream: true`, `GET /v1/responses/{id}?stream=true`) as a zod schema. */

const sequenceNumber = z
  .int()
  .min(0)
  .meta({
    description:
      'The event’s place in this stream, from 0. A stream of a finished request is the same every time; ' +
      '`starting_after=N` leaves out the events numbered N and lower.',
  });

const event = <T extends string, S extends z.core.$ZodLooseShape>(type: T, shape: S, description: string) =>
  z.looseObject({ type: z.literal(type), ...shape, sequence_number: sequenceNumber }).meta({ description });

const inMessage = { item_id: z.string().regex(/^msg_/), output_index: z.int().min(0), content_index: z.literal(0) };
const inCall = { item_id: z.string().regex(/^fc_/), output_index: z.int().min(0) };
const noLogprobs = z.array(z.never()).max(0);

/** One event of a Response stream (adapters/http/openai/responseEvents.ts writes them). */
export const responseStreamEventSchema = z
  .union([
    event('response.created', { response: responseObjectSchema }, 'The first event: the Response, queued.'),
    event(
      'response.in_progress',
      { response: responseObjectSchema },
      'A worker has the request (or it was seen finished).',
    ),
    event('response.output_item.added', { output_index: z.int().min(0), item: outputItem }, 'An output item opens.'),
    event('response.content_part.added', { ...inMessage, part: outputText }, 'The message’s text part opens, empty.'),
    event(
      'response.output_text.delta',
      { ...inMessage, delta: z.string(), logprobs: noLogprobs },
      'A piece of the text: live from the upstream, or the whole (remaining) text once the request completed.',
    ),
    event('response.output_text.done', { ...inMessage, text: z.string(), logprobs: noLogprobs }, 'The whole text.'),
    event('response.content_part.done', { ...inMessage, part: outputText }, 'The text part, whole.'),
    event('response.output_item.done', { output_index: z.int().min(0), item: outputItem }, 'An output item, whole.'),
    event(
      'response.function_call_arguments.delta',
      { ...inCall, delta: z.string() },
      'A function call’s arguments (all at once: calls are known when the request completes).',
    ),
    event(
      'response.function_call_arguments.done',
      { ...inCall, name: z.string(), arguments: z.string() },
      'A function call’s arguments, whole.',
    ),
    event('response.completed', { response: responseObjectSchema }, 'The last event: the completed Response.'),
    event('response.failed', { response: responseObjectSchema }, 'The last event: the failed Response, with `error`.'),
    event(
      'error',
      {
        code: z.enum(['cancelled', 'not_found', 'stream_interrupted']),
        message: z.string(),
        param: z.null(),
        error: z.object({
          type: z.enum(['invalid_request_error', 'server_error']),
          code: z.enum(['cancelled', 'not_found', 'stream_interrupted']),
          message: z.string(),
          param: z.null(),
        }),
      },
      'The last event when there will be no answer on this stream: the request was cancelled (`cancelled`) or ' +
        'expired (`not_found`), or an attempt whose text was already streamed failed (`stream_interrupted`: the ' +
        'request is tried again; retrieve it). The official SDKs raise it as an APIError.',
    ),
  ])
  .meta({ description: 'One event of a Response stream, `event: <type>` and `data: <this>`.' });
