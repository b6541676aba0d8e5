import { InvalidRequest } from '../../../domain/errors.js';
import type { ChatMessage, ToolCall } from '../../../ports/ModelProvider.js';
import { invalid, isObject } from './generationSettings.js';

/**
 * A Responses `input` list read into a chat conversation (the port's messages): messages, and the items of a tool
 * round trip. A run of `function_call` items becomes one assistant message with `tool_calls` (joined to the
 * assistant message just before it, if any), and each `function_call_output` a `tool` message, as chat completions
 * write a turn that calls tools. Fields the items carry when a client sends back a Response's output (`id`,
 * `status`, `annotations`, `phase`) are accepted. An `item_reference` to an output item of one of the account's
 * Responses (what the Vercel AI SDK sends for an earlier answer by default) is read as that item; what airs cannot
 * send a model (images, files, audio, reasoning, other references) is refused, naming the item.
 */

/** An output item of an earlier Response, found by its id: the answer's text, or one of its function calls. */
export type ReferencedItem =
  | { readonly type: 'message'; readonly text: string }
  | { readonly type: 'function_call'; readonly call: ToolCall };

/** Finds an earlier Response's output item by its id (`msg_…`, `fc_…`), among those the caller may see. */
export type ItemResolver = (id: string) => ReferencedItem | undefined;

const roles: ReadonlySet<string> = new Set(['user', 'assistant', 'system', 'developer']);

const describe = (value: unknown) => JSON.stringify(value)?.slice(0, 50) ?? String(value);

/** A message's content: a string, or text parts joined by newlines. */
export const textOf = (content: unknown, param: string): string | InvalidRequest => {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return invalid(param, 'must be a string or a list of input_text parts');
  const texts: string[] = [];
  for (const [i, part] of content.entries()) {
    const at = `${param}[${i}]`;
    if (!isObject(part)) return invalid(at, 'must be an object {"type": "input_text", "text": ...}');
    if (part.type !== 'input_text' && part.type !== 'output_text')
      return invalid(
        `${at}.type`,
        `part type ${describe(part.type)} is not supported; airs takes text (input_text) only`,
      );
    if (typeof part.text !== 'string') return invalid(`${at}.text`, 'must be a string');
    texts.push(part.text);
  }
  return texts.join('\n');
};

const callIdOf = (value: unknown, param: string): string | InvalidRequest =>
  typeof value === 'string' && value !== '' && value.length <= 256
    ? value
    : invalid(param, 'must be a non-empty string of at most 256 characters');

const unsupportedItem = (type: unknown): string => {
  if (type === 'reasoning') return 'reasoning items are not supported; leave them out';
  return `item type ${describe(type)} is not supported; airs takes messages, function_call and function_call_output`;
};

type Assistant = { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] };

/** An `item_reference` read as the item it names. */
const referenced = (
  item: Record<string, unknown>,
  at: string,
  resolve: ItemResolver,
): Record<string, unknown> | InvalidRequest => {
  const id = item.id;
  if (typeof id !== 'string' || id === '') return invalid(`${at}.id`, 'must be the id of an output item');
  const found = id.length <= 300 ? resolve(id) : undefined;
  if (found === undefined)
    return invalid(
      `${at}.id`,
      `no output item ${JSON.stringify(id.slice(0, 100))} among this account's completed responses (they live 24 ` +
        'hours); send the item itself (with the Vercel AI SDK: providerOptions.openai.store = false)',
    );
  return found.type === 'message'
    ? { type: 'message', role: 'assistant', content: found.text }
    : {
        type: 'function_call',
        call_id: found.call.id,
        name: found.call.function.name,
        arguments: found.call.function.arguments,
      };
};

/** The conversation an `input` list holds, or the item at fault. */
export const messagesOf = (
  input: readonly unknown[],
  resolve: ItemResolver = () => undefined,
): ChatMessage[] | InvalidRequest => {
  if (input.length === 0) return invalid('input', 'must not be an empty list');
  const messages: ChatMessage[] = [];
  const calls = new Set<string>();
  for (const [i, given] of input.entries()) {
    const at = `input[${i}]`;
    if (!isObject(given)) return invalid(at, 'must be a message {"role": ..., "content": ...} or an item');
    const item = given.type === 'item_reference' ? referenced(given, at, resolve) : given;
    if (item instanceof InvalidRequest) return item;
    if (item.type === undefined || item.type === 'message') {
      if (typeof item.role !== 'string' || !roles.has(item.role))
        return invalid(`${at}.role`, 'must be one of user, assistant, system, developer');
      const content = textOf(item.content, `${at}.content`);
      if (content instanceof InvalidRequest) return content;
      messages.push({ role: item.role as 'user' | 'assistant' | 'system' | 'developer', content });
    } else if (item.type === 'function_call') {
      const callId = callIdOf(item.call_id, `${at}.call_id`);
      if (callId instanceof InvalidRequest) return callId;
      if (typeof item.name !== 'string' || item.name === '') return invalid(`${at}.name`, 'must be a non-empty string');
      if (typeof item.arguments !== 'string') return invalid(`${at}.arguments`, 'must be a string (JSON text)');
      const call: ToolCall = { id: callId, type: 'function', function: { name: item.name, arguments: item.arguments } };
      calls.add(callId);
      const last = messages.at(-1);
      // A turn's calls (and the text before them) are one assistant message in chat completions.
      if (last?.role === 'assistant') {
        const turn = last as Assistant;
        turn.tool_calls = [...(turn.tool_calls ?? []), call];
      } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output') {
      const callId = callIdOf(item.call_id, `${at}.call_id`);
      if (callId instanceof InvalidRequest) return callId;
      if (!calls.has(callId))
        return invalid(`${at}.call_id`, `no function_call with call_id "${callId}" comes before this output`);
      const output = textOf(item.output, `${at}.output`);
      if (output instanceof InvalidRequest) return output;
      messages.push({ role: 'tool', tool_call_id: callId, content: output });
    } else return invalid(`${at}.type`, unsupportedItem(item.type));
  }
  return messages;
};
