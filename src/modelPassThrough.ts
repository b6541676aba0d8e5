import { z } from 'zod';

/**
 * `passThrough` on an `openai` model (issue 41): the extra body fields a client may send for that model (vLLM's
 * `top_k`, `min_p`, `repetition_penalty`, `guided_json`, ...), kept with the request and sent to the upstream as given.
 * The list is bounded, and no name may be one airs itself sets, reads or refuses on either face: such a field would be
 * read two ways (airs's rule and the upstream's), so the file is refused at load instead.
 */

/** The most fields one model passes through, and the longest name (vLLM's longest is under 40 characters). */
export const passThroughLimits = { fields: 64, nameChars: 64 } as const;

/**
 * Every top-level field of a chat completions or Responses body that airs sets, reads, refuses or knows as OpenAI's
 * (accepted and ignored), and `__proto__`, which no object may take as a plain key. `test/unit/modelPassThrough.test.ts`
 * holds it against both body schemas.
 */
export const reservedBodyFields: ReadonlySet<string> = new Set([
  '__proto__',
  'audio',
  'background',
  'conversation',
  'frequency_penalty',
  'function_call',
  'functions',
  'include',
  'input',
  'instructions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_output_tokens',
  'max_tokens',
  'max_tool_calls',
  'messages',
  'metadata',
  'modalities',
  'model',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'previous_response_id',
  'prompt',
  'prompt_cache_key',
  'prompt_cache_retention',
  'reasoning',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'text',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'truncation',
  'user',
  'verbosity',
  'web_search_options',
]);

const nameRule = `must be a field name: a letter or _, then letters, digits or _, at most ${passThroughLimits.nameChars} characters`;

const fieldName = z
  .string(nameRule)
  .regex(new RegExp(`^[A-Za-z_][A-Za-z0-9_]{0,${passThroughLimits.nameChars - 1}}$`), nameRule)
  .refine((name) => !reservedBodyFields.has(name), {
    error: (issue) => `"${String(issue.input)}" is a field airs sets or checks itself; it cannot be passed through`,
  });

/** The schema of `models[].passThrough`. */
export const passThroughSchema = z
  .array(fieldName)
  .max(passThroughLimits.fields, `must list at most ${passThroughLimits.fields} fields`)
  .refine((names) => new Set(names).size === names.length, 'must not list a field twice');

/** The fields the model of that id passes through (undefined or empty: none, or no such model). */
export type PassThroughOf = (model: string) => readonly string[] | undefined;
