import type { SubmitInput } from '../../../app/Requests.js';
import { lastUserText, textOfMessage } from '../../../app/storedInput.js';
import { InvalidRequest } from '../../../domain/errors.js';
import type { ChatMessage } from '../../../ports/ModelProvider.js';
import { generationSettingsOf, invalid, isObject, type ResponseSettings } from './generationSettings.js';
import { type ItemResolver, messagesOf } from './inputItems.js';
import { metadataOf } from './metadata.js';

/**
 * A `POST /v1/responses` body understood: what to queue, whether the caller waits for it or streams it, and the
 * settings its Response echoes.
 */
export type ResponsesCreate = {
  readonly input: SubmitInput;
  readonly background: boolean;
  readonly stream: boolean;
  readonly settings: ResponseSettings;
};

/** OpenAI fields airs cannot honour: refused rather than ignored, since ignoring them would change the answer. */
const unsupported: Readonly<Record<string, string>> = {
  previous_response_id: 'previous_response_id is not supported; send the whole conversation as input',
  conversation: 'conversation is not supported; send the whole conversation as input',
  prompt: 'prompt templates are not supported; send the text as input',
};

/** A surrogate half alone is not text: storage would turn it into U+FFFD and the echo would differ. */
const brokenUnicode = /\p{Cs}/u;

const flag = (body: Record<string, unknown>, field: string): boolean | InvalidRequest => {
  const value = body[field];
  if (value === undefined || value === null) return false;
  return typeof value === 'boolean' ? value : invalid(field, 'must be true or false');
};

/**
 * Reads a `POST /v1/responses` body as OpenAI's SDKs send it: `model`, `input` (a string, or a list of messages and
 * tool-call items, see inputItems.ts; `resolve` finds the items an `item_reference` names), optional `instructions` (a leading system message), `background`, `stream`,
 * the generation settings (generationSettings.ts), and `metadata` (kept with the request and shown with it, bounded as
 * OpenAI bounds it: metadata.ts). Fields that do not change the answer (`store`, `include`, `truncation`,
 * `service_tier`, `prompt_cache_key`, `safety_identifier`, `reasoning`, `stream_options`, ...) are accepted and
 * ignored; fields that would change it unseen are refused with the field named in `param`.
 */
export const parseResponsesCreate = (body: unknown, resolve?: ItemResolver): ResponsesCreate | InvalidRequest => {
  if (!isObject(body))
    return new InvalidRequest({ message: 'the body must be a JSON object with "model" and "input"' });
  if (body.model === undefined) return invalid('model', 'is required');
  if (typeof body.model !== 'string') return invalid('model', 'must be a string');
  for (const [field, message] of Object.entries(unsupported))
    if (body[field] !== undefined && body[field] !== null) return invalid(field, message);
  const background = flag(body, 'background');
  if (background instanceof InvalidRequest) return background;
  const stream = flag(body, 'stream');
  if (stream instanceof InvalidRequest) return stream;
  if (body.instructions !== undefined && body.instructions !== null && typeof body.instructions !== 'string')
    return invalid('instructions', 'must be a string');
  const instructions =
    typeof body.instructions === 'string' && body.instructions !== '' ? body.instructions : undefined;

  if (body.input === undefined || body.input === null) return invalid('input', 'is required');
  let messages: ChatMessage[] | undefined;
  let prompt: string;
  if (typeof body.input === 'string') {
    prompt = body.input;
    if (instructions !== undefined) messages = [{ role: 'user', content: prompt }];
  } else if (Array.isArray(body.input)) {
    const read = messagesOf(body.input, resolve);
    if (read instanceof InvalidRequest) return read;
    messages = read;
    prompt = lastUserText(read);
  } else return invalid('input', 'must be a string or a list of messages');
  if (instructions !== undefined) messages = [{ role: 'system', content: instructions }, ...(messages ?? [])];

  const texts = messages?.map(textOfMessage) ?? [prompt];
  const callsTools = messages?.some((m) => m.role === 'tool' || (m.role === 'assistant' && m.tool_calls)) === true;
  if (!callsTools && texts.every((text) => text.trim() === '')) return invalid('input', 'must not be empty');
  if (texts.some((text) => brokenUnicode.test(text)))
    return invalid('input', 'must be valid Unicode text; it contains an unpaired surrogate');

  const generation = generationSettingsOf(body, background);
  if (generation instanceof InvalidRequest) return generation;
  const metadata = metadataOf(body.metadata);
  if (metadata instanceof InvalidRequest) return metadata;
  const { params, settings } = generation;
  return {
    input: {
      model: body.model,
      prompt,
      messages,
      params: Object.keys(params).length === 0 ? undefined : params,
      metadata,
    },
    background,
    stream,
    settings,
  };
};
