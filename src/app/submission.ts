import { z } from 'zod';
import { InvalidRequest } from '../domain/errors.js';
import type { RequestedTier } from '../domain/serviceTier.js';
import type { GenerationParams } from '../ports/ModelProvider.js';
import { serviceTierFieldNamed } from './serviceTierField.js';

/** A POST body that passed validation. */
export type Submission = {
  readonly model: string;
  readonly prompt: string;
  readonly serviceTier?: RequestedTier | undefined;
};

/** The POST body's shape (its finer rules are checked below); the OpenAPI document is generated from it too. */
export const submissionBodySchema = z
  .object(
    {
      model: z
        .string({ error: (issue) => (issue.input === undefined ? 'model is required' : 'model must be a string') })
        .meta({ description: 'One of the configured model ids (`echo` and `echo-slow` by default).' }),
      prompt: z
        .string({ error: (issue) => (issue.input === undefined ? 'prompt is required' : 'prompt must be a string') })
        .meta({
          description:
            'Not empty, not only white space, valid Unicode, at most `maxPromptChars` (default 1,000,000) UTF-16 units and at most `maxPromptBytes` (default 1 MiB) in UTF-8.',
        }),
      service_tier: serviceTierFieldNamed(true),
    },
    { error: 'the body must be a JSON object with "model" and "prompt"' },
  )
  .meta({ description: 'A prompt for a model. Other fields are allowed and ignored.' });

/** What every submit's input is checked against (contract 15 for the sizes). */
export type SubmissionRules = {
  readonly modelIds: readonly string[];
  readonly maxPromptChars: number;
  readonly maxPromptBytes: number;
};

/**
 * The rules for an account held to `allowedModels` (contract 21): a model it may not use is, for it, a model that
 * does not exist, refused as an unknown model is, and the models named to it are only those it may use.
 */
export const rulesForAccount = (
  rules: SubmissionRules,
  allowedModels: readonly string[] | undefined,
): SubmissionRules =>
  allowedModels === undefined
    ? rules
    : {
        modelIds: rules.modelIds.filter((id) => allowedModels.includes(id)),
        maxPromptChars: rules.maxPromptChars,
        maxPromptBytes: rules.maxPromptBytes,
      };

/**
 * The byte limit (contract 15): the text as stored, in UTF-8, at most `maxPromptBytes`. A prompt of 1,000,000 `€` is
 * within `maxPromptChars` but 3 MB on disk; whichever limit is smaller applies. `what` names the text in the message.
 */
const overBytes = (text: string, what: string, rules: SubmissionRules): InvalidRequest | undefined => {
  // Quick exit: a UTF-16 unit is at most 3 bytes of UTF-8, so a short text cannot be over.
  if (text.length * 3 <= rules.maxPromptBytes) return undefined;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes <= rules.maxPromptBytes) return undefined;
  return new InvalidRequest({
    message: `${what} is ${bytes} bytes in UTF-8; the maximum is ${rules.maxPromptBytes} (maxPromptBytes)`,
    details: { max_prompt_bytes: rules.maxPromptBytes },
  });
};

/**
 * Checks a parsed POST body against the contract: an object whose `model` is a configured model id and whose
 * `prompt` is a non-empty string of at most `maxPromptChars` characters and `maxPromptBytes` bytes of UTF-8.
 */
export const parseSubmission = (body: unknown, rules: SubmissionRules): Submission | InvalidRequest => {
  const parsed = submissionBodySchema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return new InvalidRequest({ message: issue?.message ?? 'invalid body' });
  }
  const { model, prompt } = parsed.data;
  const serviceTier = parsed.data.service_tier ?? undefined;
  if (!rules.modelIds.includes(model)) {
    return new InvalidRequest({
      message: `unknown model "${model.slice(0, 100)}"; known models: ${rules.modelIds.join(', ')}`,
      details: { known_models: rules.modelIds },
    });
  }
  if (prompt.trim().length === 0) {
    return new InvalidRequest({
      message:
        prompt.length === 0 ? 'prompt must not be empty' : 'prompt must not be empty (it holds only white space)',
    });
  }
  // A lone surrogate (JSON "\ud800") is not text: storage would turn it into U+FFFD and the echo would differ.
  if (/\p{Cs}/u.test(prompt)) {
    return new InvalidRequest({ message: 'prompt must be valid Unicode text; it contains an unpaired surrogate' });
  }
  if (prompt.length > rules.maxPromptChars) {
    return new InvalidRequest({
      message: `prompt is ${prompt.length} characters long; the maximum is ${rules.maxPromptChars}`,
      details: { max_prompt_chars: rules.maxPromptChars },
    });
  }
  return overBytes(prompt, 'prompt', rules) ?? { model, prompt, serviceTier };
};

/**
 * The rules every submit's input meets, whichever face it came through: a configured model, at most `maxPromptChars`
 * of text in all (a conversation counts every message), and at most `maxPromptBytes` of UTF-8 as stored (`storedText`:
 * a conversation's messages as JSON, roles included).
 */
export const checkModelAndSize = (
  input: {
    readonly model: string;
    readonly prompt: string;
    readonly messages?: readonly { content: string | null }[] | undefined;
  },
  storedText: string,
  rules: SubmissionRules,
): InvalidRequest | undefined => {
  if (!rules.modelIds.includes(input.model)) {
    return new InvalidRequest({
      message: `unknown model "${input.model.slice(0, 100)}"; known models: ${rules.modelIds.join(', ')}`,
      details: { known_models: rules.modelIds },
    });
  }
  const chars = input.messages?.reduce((sum, m) => sum + (m.content?.length ?? 0), 0) ?? input.prompt.length;
  if (chars > rules.maxPromptChars) {
    return new InvalidRequest({
      message: `${input.messages === undefined ? 'prompt' : 'the input'} is ${chars} characters long; the maximum is ${rules.maxPromptChars}`,
      details: { max_prompt_chars: rules.maxPromptChars },
    });
  }
  return overBytes(storedText, input.messages === undefined ? 'prompt' : 'the input as stored', rules);
};

/**
 * What a model cannot do, said before anything is queued: `echo` answers text, it calls no tools and keeps no schema.
 * The param is named as chat completions name it.
 */
export const beyondModel = (
  input: { readonly model: string; readonly params?: GenerationParams | undefined },
  provider: string | undefined,
): InvalidRequest | undefined => {
  if (provider !== 'echo') return undefined;
  if ((input.params?.tools?.length ?? 0) > 0)
    return new InvalidRequest({
      message: `tools: the model ${input.model} (echo) cannot call tools; use a model of the openai provider`,
      details: { param: 'tools' },
    });
  if (input.params?.response_format?.type === 'json_schema')
    return new InvalidRequest({
      message: `response_format: the model ${input.model} (echo) cannot follow a JSON schema; use a model of the openai provider`,
      details: { param: 'response_format' },
    });
  return undefined;
};
