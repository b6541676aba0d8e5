import { z } from 'zod';
import { serviceTierField } from '../../../../app/serviceTierField.js';
import type { ResponseFormat } from '../../../../ports/ModelProvider.js';
import { metadataField } from '../metadataSchema.js';
import { absent, brokenUnicode, isObject, restatingFaults, shown } from '../wireFaults.js';
import {
  chatBounds,
  functionName,
  jsonSchemaObject,
  optionalBoolean,
  optionalString,
  unitsAtMost,
} from './fieldSchemas.js';
import { message, textOf } from './messagesSchema.js';
import { functionTools, toolChoice, toolChoiceFault } from './toolsSchema.js';

/**
 * `POST /v1/chat/completions` (product contract section 13) as zod schemas: here the body airs understands (its
 * messages in messagesSchema.ts, its tools in toolsSchema.ts); the `chat.completion` answer and the
 * `chat.completion.chunk` of its stream are in completionSchema.ts; all in the shapes the official SDKs, vLLM and
 * llama.cpp use. The OpenAPI document (adapters/http/openapi.ts) is generated from them. Errors are OpenAI's shape
 * (openai/wireFormat.ts).
 */

// ---- The body ----
//
// The one description of the body: the route parses it with this schema (adapters/http/openai/chat/request.ts),
// so does the Batch API for each line of an input file (adapters/http/openai/batchEndpoints.ts), and the OpenAPI
// document shows it. Each rule carries the words of its refusal. A body that breaks several rules is refused for the
// first in the order of the fields below, unknown fields just before `stream` (the order airs has always checked
// them in).

/** The field read just after unknown fields are refused (the parser places their refusal there). */
export const chatUnknownFieldsBefore = 'stream';

/** A field refused (naming it as a whole) unless it is what `schema` allows, or absent. */
const refusedUnless = <T extends z.ZodType>(schema: T, message: string) =>
  z.union([schema, z.null()], message).optional();

/** A field refused whenever it is given (not null). */
const refused = (message: string) =>
  z
    .null(message)
    .optional()
    .meta({ description: `Refused (400): ${message}.` });

const numberIn = (min: number, max: number) => {
  const rule = `must be a number from ${min} to ${max}`;
  return z.number(rule).min(min, rule).max(max, rule).nullish();
};

const tokens = () => {
  const rule = `must be an integer from 1 to ${chatBounds.maxTokens}`;
  // int32: the bound is the format's own (its maximum is chatBounds.maxTokens), one check the fewer.
  return z.int32(rule).min(1, rule).nullish();
};

const responseFormat = z
  .discriminatedUnion(
    'type',
    [
      z.object({ type: z.literal('text') }),
      z.object({ type: z.literal('json_object') }),
      z.object({
        type: z.literal('json_schema'),
        json_schema: z.object(
          {
            name: functionName,
            description: optionalString,
            schema: jsonSchemaObject,
            strict: optionalBoolean,
          },
          'must be an object {"name", "schema"}',
        ),
      }),
    ],
    {
      error: (issue) =>
        !isObject(issue.input) ? 'must be an object with a type' : 'must be one of text, json_object, json_schema',
    },
  )
  .transform((format): ResponseFormat => {
    if (format.type !== 'json_schema') return { type: format.type };
    const { name, description, schema, strict } = format.json_schema;
    return {
      type: 'json_schema',
      json_schema: {
        name,
        ...(absent(description) ? {} : { description }),
        ...(absent(schema) ? {} : { schema }),
        ...(absent(strict) ? {} : { strict }),
      },
    };
  });

const acceptedString = z.string('must be a string').nullish().meta({ description: 'Accepted and ignored.' });

/** The body of `POST /v1/chat/completions`, in the order its fields are checked. */
export const chatCompletionCreateBodySchema = z
  .strictObject(
    {
      model: z
        .string({ error: (issue) => (absent(issue.input) ? 'is required' : 'must be a string') })
        .meta({ description: 'One of the configured model ids (`GET /v1/models` lists them).' }),
      messages: restatingFaults(
        z
          .array(message, { error: (issue) => (absent(issue.input) ? 'is required' : 'must be a list of messages') })
          .min(1, 'must not be an empty list')
          .check((payload) => {
            const read = payload.value;
            const texts = read.map((m) => (absent(m.content) ? '' : textOf(m.content)));
            const callsTools = read.some((m) => m.role === 'assistant' && (m.tool_calls ?? []).length > 0);
            const fault =
              !callsTools && texts.every((text) => text.trim() === '')
                ? 'must not be empty (every message holds only white space)'
                : texts.some((text) => brokenUnicode.test(text))
                  ? 'must be valid Unicode text; it contains an unpaired surrogate'
                  : undefined;
            if (fault !== undefined) payload.issues.push({ code: 'custom', message: fault, input: read });
          }),
      ).meta({
        description:
          'The conversation. `echo` answers the last user message’s text; the `openai` provider sends them all. ' +
          'Not only white space; valid Unicode. The stored conversation (with its parameters) is at most ' +
          '`maxPromptChars` and `maxPromptBytes`.',
      }),
      // Fields that would change the answer and that airs cannot honour: refused, never ignored (contract 13).
      audio: refused('audio output is not supported; airs answers text'),
      functions: refused('functions (the deprecated form of tools) are not supported; send tools'),
      function_call: refused('function_call (the deprecated form of tool_choice) is not supported; send tool_choice'),
      prediction: refused('predicted outputs are not supported'),
      reasoning_effort: refused('reasoning_effort is not supported by airs'),
      verbosity: refused('verbosity is not supported by airs'),
      web_search_options: refused('web search is not supported'),
      // ... and those refused only when they ask for something.
      n: z.literal(1, 'only 1 choice is supported').nullish().meta({ description: 'Only 1 (400 otherwise).' }),
      logprobs: z
        .literal(false, 'log probabilities are not supported')
        .nullish()
        .meta({ description: 'Not supported (400 when true).' }),
      top_logprobs: refused('log probabilities are not supported'),
      modalities: refusedUnless(z.array(z.literal('text')), 'only ["text"] is supported'),
      logit_bias: refusedUnless(z.record(z.string(), z.never()), 'logit_bias is not supported').meta({
        description: 'Not supported (400), but empty.',
      }),
      // Accepted and not forwarded: storage, billing, caching and abuse-tracking hints of OpenAI's own service, which
      // cannot change the answer's text. (`metadata`, below, is kept with the request.)
      store: z.boolean('must be a boolean').nullish().meta({ description: 'Accepted and ignored.' }),
      service_tier: serviceTierField,
      prompt_cache_key: acceptedString,
      prompt_cache_retention: acceptedString,
      safety_identifier: acceptedString,
      stream: optionalBoolean.meta({
        description:
          '`true`: answer with `chat.completion.chunk` events (`text/event-stream`), then `data: [DONE]`; the request ' +
          'is cancelled when the caller goes away.',
      }),
      stream_options: z
        .strictObject(
          {
            include_usage: optionalBoolean,
            include_obfuscation: optionalBoolean.meta({ description: 'Accepted and ignored.' }),
          },
          { error: (issue) => (issue.code === 'unrecognized_keys' ? 'unknown stream option' : 'must be an object') },
        )
        .nullish()
        .meta({ description: '`include_usage: true`: a last chunk, with no choices, carries `usage`.' }),
      // Generation parameters: kept with the request and forwarded to `openai`-provider upstreams.
      temperature: numberIn(0, 2),
      top_p: numberIn(0, 1),
      presence_penalty: numberIn(-2, 2),
      frequency_penalty: numberIn(-2, 2),
      max_tokens: tokens(),
      max_completion_tokens: tokens(),
      seed: z.int('must be an integer').nullish(),
      stop: z
        .union(
          [
            z.string(),
            // Counted once its items are read (zod's .max would count first): a list of non-strings is refused as such.
            z
              .array(z.string())
              .refine(
                (stop) => stop.length <= chatBounds.stopSequences,
                `must hold at most ${chatBounds.stopSequences} sequences`,
              )
              .meta({ maxItems: chatBounds.stopSequences }),
          ],
          'must be a string or a list of strings',
        )
        .nullish(),
      response_format: responseFormat.nullish().meta({
        description: '`json_schema` is refused on the `echo` provider (400).',
      }),
      user: unitsAtMost(
        z.string('must be a string'),
        chatBounds.userChars,
        `must be at most ${chatBounds.userChars} characters long`,
      ).nullish(),
      tools: functionTools.nullish().meta({ description: 'Names are unique. Refused on the `echo` provider (400).' }),
      parallel_tool_calls: optionalBoolean,
      tool_choice: toolChoice.nullish().meta({
        description:
          '`required` needs `tools`; a function named must be one of `tools`. Without tools, `none` and `auto` are ' +
          'not forwarded.',
      }),
      metadata: metadataField.meta({
        description:
          'Bounded and kept with the request as on `POST /v1/responses` (400 beyond the bounds); no chat completion ' +
          'object shows it (OpenAI shows it only through stored completions, which airs does not serve).',
      }),
    },
    {
      error: (issue) =>
        issue.code === 'unrecognized_keys'
          ? `unknown parameter ${shown(issue.keys[0])}; airs refuses what it would not honour`
          : 'the body must be a JSON object with "model" and "messages"',
    },
  )
  .superRefine(
    (body, payload) => {
      // Rules across fields, once the fields they read were read without a fault.
      if (payload.issues.some((issue) => issue.path?.[0] === 'tools' || issue.path?.[0] === 'tool_choice')) return;
      const fault = toolChoiceFault(body);
      if (fault !== undefined) payload.addIssue({ code: 'custom', ...fault });
    },
    { when: (payload) => isObject(payload.value) },
  )
  .meta({
    description:
      'An OpenAI chat completions body. The generation parameters are forwarded to `openai`-provider upstreams and ' +
      'kept with the request. Any other field is refused (400), naming it, unless the model passes it through (its ' +
      '`passThrough`): then it is sent to the upstream as given.',
  });
