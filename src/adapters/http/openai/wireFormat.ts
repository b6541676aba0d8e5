import { z } from 'zod';
import { serviceTierField } from '../../../app/serviceTierField.js';
import { errorCodes } from '../wireFormat.js';
import { metadataField } from './metadataSchema.js';
import { seconds } from './responseObjectSchema.js';
import {
  functionName,
  jsonSchemaObject,
  numberIn,
  optionalBoolean,
  optionalString,
  refused,
} from './responsesFields.js';
import { inputFault, inputItems } from './responsesInput.js';
import { functionTools, toolChoice, toolChoiceFault } from './responsesTools.js';
import { absent, isObject, type RawIssue, restated, restatingFaults } from './wireFaults.js';

/**
 * The OpenAI-compatible face (product contract sections 11 and 13) as zod schemas: here the `POST /v1/responses` body
 * airs understands (its input in responsesInput.ts, its tools in responsesTools.ts, its metadata in metadataSchema.ts),
 * the Model and model list, and OpenAI's error shape; the Response object and its stream events are in
 * responseObjectSchema.ts and responseStreamEventSchema.ts. The OpenAPI document (adapters/http/openapi.ts) is
 * generated from them; the type checks there keep them in step with what the face (adapters/http/openai/) really sends.
 */

/**
 * The rules across fields of a body whose fields were read (those in `faulty` were not: their rules wait): `input`
 * and `instructions` hold text, and `tool_choice` names one of `tools`. Their faults, in the order of the fields.
 */
export const responsesCrossFieldFaults = (
  body: Parameters<typeof inputFault>[0] & Parameters<typeof toolChoiceFault>[0],
  faulty: ReadonlySet<PropertyKey | undefined> = new Set(),
): { readonly path: PropertyKey[]; readonly message: string }[] => {
  const faults: { readonly path: PropertyKey[]; readonly message: string }[] = [];
  if (!faulty.has('input') && !faulty.has('instructions')) {
    const fault = inputFault(body);
    if (fault !== undefined) faults.push({ path: ['input'], message: fault });
  }
  if (!faulty.has('tools') && !faulty.has('tool_choice')) {
    const fault = toolChoiceFault(body);
    if (fault !== undefined) faults.push(fault);
  }
  return faults;
};

/**
 * The body of `POST /v1/responses`: the one description of it. The route parses with it (parseResponsesCreate,
 * adapters/http/openai/input.ts), so does the Batch API for each line of an input file (batchEndpoints.ts), and the
 * OpenAPI document shows it. Each rule carries the words of its refusal; a body that breaks several is refused for the
 * first in the order of the fields below (the order airs has always checked them in). Fields it does not name are
 * accepted and ignored (`store`, `truncation`, `reasoning`, `stream_options`, ...): none of them changes the answer.
 */

const textFormat = z.discriminatedUnion(
  'type',
  [
    z.looseObject({ type: z.literal('text') }),
    z.looseObject({ type: z.literal('json_object') }),
    z.looseObject({
      type: z.literal('json_schema'),
      name: functionName,
      schema: jsonSchemaObject.meta({ description: 'The JSON Schema the answer follows.' }),
      description: optionalString,
      strict: optionalBoolean,
    }),
  ],
  {
    error: (issue) =>
      !isObject(issue.input) ? 'must be an object {"type": ...}' : 'must be "text", "json_object" or "json_schema"',
  },
);

const maxOutputTokensRule = 'must be a whole number of at least 1';

const logprobsInclude = 'message.output_text.logprobs';

/** The body of `POST /v1/responses`, in the order its fields are checked. */
export const responsesCreateBodySchema = z
  .looseObject(
    {
      model: z
        .string({ error: (issue) => (issue.input === undefined ? 'is required' : 'must be a string') })
        .meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
      previous_response_id: refused(
        'previous_response_id is not supported; send the whole conversation as input',
        'send the whole conversation as `input`.',
      ),
      conversation: refused(
        'conversation is not supported; send the whole conversation as input',
        'send the whole conversation as `input`.',
      ),
      prompt: refused('prompt templates are not supported; send the text as input', 'prompt templates.'),
      background: optionalBoolean.meta({
        description:
          '`true`: answer at once with the queued Response, and poll `GET /v1/responses/{id}`. Otherwise the call ' +
          'waits until the request is final (`completed`, `failed` or `cancelled`), and cancels it if the caller ' +
          'goes away first.',
      }),
      stream: optionalBoolean.meta({
        description:
          '`true`: answer with the Response’s events (`text/event-stream`). A stream that is not `background` ' +
          'cancels its request when the caller goes away.',
      }),
      instructions: optionalString.meta({ description: 'Sent to the model as a leading system message.' }),
      // The restatement is registered on the union as it runs: after its check (a check makes a new definition).
      input: restated(
        restatingFaults(
          z.union([z.string(), inputItems], {
            error: (issue) => (absent(issue.input) ? 'is required' : 'must be a string or a list of messages'),
          }),
        ),
        // A list is refused for what is wrong inside it.
        (issue) =>
          issue.code === 'invalid_union' && Array.isArray(issue.input)
            ? ((issue.errors[1] ?? []) as RawIssue[])
            : undefined,
      )
        // Required (the list's reading takes anything first, so zod would take the union as optional).
        .nonoptional('is required')
        .meta({
          description:
            'A string (one user message), or a list of messages and function call items. Not only white space; valid ' +
            'Unicode (`instructions` included); the text airs stores for it is at most `maxPromptChars` UTF-16 units ' +
            'and at most `maxPromptBytes` (1 MiB) of UTF-8 (a list: the conversation and the generation settings as ' +
            'JSON). `echo` answers the last user message’s text. Reasoning items, and other items airs cannot send a ' +
            'model, are refused (400).',
        }),
      // Fields that would change the answer and that airs cannot honour: refused, never ignored.
      top_logprobs: z
        .literal(0, 'log probabilities are not supported')
        .nullish()
        .meta({ description: 'Log probabilities are not supported (400 unless 0).' }),
      include: z
        .unknown()
        .check((payload) => {
          const value = payload.value;
          if (Array.isArray(value) && value.includes(logprobsInclude))
            payload.issues.push({
              code: 'custom',
              message: `log probabilities (${logprobsInclude}) are not supported`,
              input: value,
            });
        })
        .optional()
        .meta({
          not: { type: 'array', contains: { const: logprobsInclude } },
          description: `Accepted and ignored, except a list holding \`${logprobsInclude}\` (400).`,
        }),
      max_tool_calls: refused(
        'is not supported; the model answers with one round of tool calls at most',
        'the model answers with one round of tool calls at most.',
      ),
      temperature: numberIn(0, 2),
      top_p: numberIn(0, 1),
      max_output_tokens: z
        .number(maxOutputTokensRule)
        .refine(Number.isSafeInteger, maxOutputTokensRule)
        .min(1, maxOutputTokensRule)
        .meta({
          type: 'integer',
          maximum: Number.MAX_SAFE_INTEGER,
          description: 'Sent upstream as `max_completion_tokens` (the tokens the model writes, reasoning included).',
        })
        .nullish(),
      user: optionalString,
      parallel_tool_calls: optionalBoolean,
      tools: functionTools.nullish().meta({ description: 'Names are unique.' }),
      tool_choice: toolChoice.nullish().meta({
        description: '`required` needs `tools`; a function named must be one of `tools`.',
      }),
      text: z
        .looseObject(
          {
            verbosity: z
              .null('is not supported; leave it out (the model answers at its own length)')
              .optional()
              .meta({ description: 'Not supported (400).' }),
            format: textFormat.nullish(),
          },
          'must be an object {"format": ...}',
        )
        .nullish()
        .meta({ description: 'The answer’s format, sent upstream as `response_format`.' }),
      metadata: metadataField,
      service_tier: serviceTierField,
    },
    'the body must be a JSON object with "model" and "input"',
  )
  .superRefine(
    (body, payload) => {
      // Rules across fields, once the fields they read were read without a fault.
      const faulty = new Set(payload.issues.map((issue) => issue.path?.[0]));
      for (const fault of responsesCrossFieldFaults(body, faulty)) payload.addIssue({ code: 'custom', ...fault });
    },
    { when: (payload) => isObject(payload.value) },
  )
  .meta({
    description:
      'An OpenAI Responses create body. Fields that do not change the answer (`store`, `truncation`, ' +
      '`prompt_cache_key`, `safety_identifier`, `reasoning`, `stream_options`, ...) are accepted ' +
      'and ignored.',
  });

/** A Responses body read by the schema. */
export type ResponsesCreateBody = z.output<typeof responsesCreateBodySchema>;

// ---- Models ----

export const modelObjectSchema = z
  .looseObject({
    id: z.string(),
    object: z.literal('model'),
    created: seconds.meta({ description: 'When this server started (airs keeps no other date for a model).' }),
    owned_by: z.literal('airs'),
  })
  .meta({ description: 'A configured model.' });

export const modelListSchema = z
  .looseObject({ object: z.literal('list'), data: z.array(modelObjectSchema) })
  .meta({ description: 'The configured models, in the config’s order.' });

// ---- Errors ----

/** OpenAI's error types, by status (adapters/http/openai/errors.ts). */
export const openAiErrorTypes = [
  'invalid_request_error',
  'authentication_error',
  'permission_error',
  'rate_limit_error',
  'server_error',
] as const;

/** Every error of the OpenAI-compatible routes: OpenAI's shape, with the contract's code in `code`. */
export const openAiErrorSchema = z
  .object({
    error: z.object({
      message: z.string().min(1).meta({ description: 'For humans: what to fix. Never internals.' }),
      type: z.enum(openAiErrorTypes).meta({
        description:
          'By status: 401 `authentication_error`, 403 `permission_error`, 429 `rate_limit_error`, 5xx ' +
          '`server_error`, any other `invalid_request_error`.',
      }),
      param: z.string().nullable().meta({ description: 'The body field at fault, where the parser knows it.' }),
      code: z.enum([...errorCodes, 'model_not_found']).meta({
        description:
          'The contract’s error code, as on `/v1/ai`; `model_not_found` (404) for a model that does not exist for ' +
          'the account (not configured, or not among its `allowedModels`), as OpenAI answers it.',
      }),
    }),
  })
  .meta({ description: 'OpenAI’s error shape, on the OpenAI-compatible routes.' });
