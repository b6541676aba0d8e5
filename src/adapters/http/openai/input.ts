import type { SubmitInput } from '../../../app/Requests.js';
import { lastUserText } from '../../../app/storedInput.js';
import { InvalidRequest } from '../../../domain/errors.js';
import type { ChatMessage } from '../../../ports/ModelProvider.js';

/** A `POST /v1/responses` body understood: what to queue, and whether the caller waits for it. */
export type ResponsesCreate = { readonly input: SubmitInput; readonly background: boolean };

const roles: ReadonlySet<string> = new Set(['user', 'assistant', 'system', 'developer']);

/** OpenAI fields airs cannot honour: refused rather than ignored, since ignoring them would change the answer. */
const unsupported: Readonly<Record<string, string>> = {
  previous_response_id: 'previous_response_id is not supported; send the whole conversation as input',
  conversation: 'conversation is not supported; send the whole conversation as input',
  prompt: 'prompt templates are not supported; send the text as input',
};

const invalid = (param: string, message: string) =>
  new InvalidRequest({ message: `${param}: ${message}`, details: { param } });

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A surrogate half alone is not text: storage would turn it into U+FFFD and the echo would differ. */
const brokenUnicode = /\p{Cs}/u;

const textOf = (content: unknown, param: string): string | InvalidRequest => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return invalid(param, 'must be a string or a list of input_text parts');
  const texts: string[] = [];
  for (const [i, part] of content.entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(part)) return invalid(at, 'must be an object {"type": "input_text", "text": ...}');
    if (part.type !== 'input_text' && part.type !== 'output_text')
      return invalid(
        `${at}.type`,
        `part type ${JSON.stringify(part.type)?.slice(0, 50)} is not supported; airs takes text (input_text) only`,
      );
    if (typeof part.text !== 'string') return invalid(`${at}.text`, 'must be a string');
    texts.push(part.text);
  }
  return texts.join('\n');
};

const messagesOf = (input: unknown[]): ChatMessage[] | InvalidRequest => {
  if (input.length === 0) return invalid('input', 'must not be an empty list');
  const messages: ChatMessage[] = [];
  for (const [i, item] of input.entries()) {
    const at = `input[${i}]`;
    if (!isObject(item)) return invalid(at, 'must be a message {"role": ..., "content": ...}');
    if (item.type !== undefined && item.type !== 'message')
      return invalid(
        `${at}.type`,
        `item type ${JSON.stringify(item.type)?.slice(0, 50)} is not supported; airs takes messages only`,
      );
    if (typeof item.role !== 'string' || !roles.has(item.role))
      return invalid(`${at}.role`, 'must be one of user, assistant, system, developer');
    const content = textOf(item.content, `${at}.content`);
    if (content instanceof InvalidRequest) return content;
    messages.push({ role: item.role as 'user' | 'assistant' | 'system' | 'developer', content });
  }
  return messages;
};

/**
 * Reads a `POST /v1/responses` body as OpenAI's SDKs send it: `model`, `input` (a string, or a list of messages whose
 * content is a string or `input_text` parts), optional `instructions` (a leading system message) and `background`.
 * Other OpenAI fields (temperature, max_output_tokens, metadata, store, ...) are accepted and ignored; streaming and
 * fields that would change the answer unseen are refused with the field named in `param`.
 */
export const parseResponsesCreate = (body: unknown): ResponsesCreate | InvalidRequest => {
  if (!isObject(body))
    return new InvalidRequest({ message: 'the body must be a JSON object with "model" and "input"' });
  if (body.model === undefined) return invalid('model', 'is required');
  if (typeof body.model !== 'string') return invalid('model', 'must be a string');
  if (body.stream === true)
    return invalid('stream', 'streaming is not supported; use "background": true and poll GET /v1/responses/{id}');
  for (const [field, message] of Object.entries(unsupported))
    if (body[field] !== undefined && body[field] !== null) return invalid(field, message);
  if (Array.isArray(body.tools) && body.tools.length > 0) return invalid('tools', 'tools are not supported');
  if (body.background !== undefined && body.background !== null && typeof body.background !== 'boolean')
    return invalid('background', 'must be true or false');
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
    const read = messagesOf(body.input);
    if (read instanceof InvalidRequest) return read;
    messages = read;
    prompt = lastUserText(read);
  } else return invalid('input', 'must be a string or a list of messages');
  if (instructions !== undefined) messages = [{ role: 'system', content: instructions }, ...(messages ?? [])];

  const texts = messages?.map((m) => m.content ?? '') ?? [prompt];
  if (texts.every((text) => text.trim() === '')) return invalid('input', 'must not be empty');
  if (texts.some((text) => brokenUnicode.test(text)))
    return invalid('input', 'must be valid Unicode text; it contains an unpaired surrogate');
  return { input: { model: body.model, prompt, messages }, background: body.background === true };
};
