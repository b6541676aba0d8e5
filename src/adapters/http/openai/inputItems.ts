import type { ToolCall } from '../../../ports/ModelProvider.js';
import { itemReferenceIdChars } from './responsesInput.js';

/**
 * The `item_reference`s of a Responses `input` list, read as the items they name before the body's schema reads it
 * (openai/wireFormat.ts: the schema refuses a reference left, naming its id). A reference names an output item of
 * one of the account's Responses: what the Vercel AI SDK sends for an earlier answer by default.
 */

/** An output item of an earlier Response, found by its id: the answer's text, or one of its function calls. */
export type ReferencedItem =
  | { readonly type: 'message'; readonly text: string }
  | { readonly type: 'function_call'; readonly call: ToolCall };

/** Finds an earlier Response's output item by its id (`msg_…`, `fc_…`), among those the caller may see. */
export type ItemResolver = (id: string) => ReferencedItem | undefined;

/** The item a reference names, as a client would have sent it. */
const itemOf = (found: ReferencedItem): Record<string, unknown> =>
  found.type === 'message'
    ? { type: 'message', role: 'assistant', content: found.text }
    : {
        type: 'function_call',
        call_id: found.call.id,
        name: found.call.function.name,
        arguments: found.call.function.arguments,
      };

/**
 * The body with each `item_reference` of its `input` list that `resolve` finds replaced by the item it names (a copy;
 * the body itself when there is none to replace).
 */
export const resolvedInputOf = (body: unknown, resolve?: ItemResolver): unknown => {
  const input = (body as { input?: unknown } | null | undefined)?.input;
  if (resolve === undefined || !Array.isArray(input) || typeof body !== 'object' || Array.isArray(body)) return body;
  let resolved: unknown[] | undefined;
  for (const [i, item] of input.entries()) {
    const { type, id } = (typeof item === 'object' && item !== null ? item : {}) as { type?: unknown; id?: unknown };
    if (type !== 'item_reference' || typeof id !== 'string' || id === '' || id.length > itemReferenceIdChars) continue;
    const found = resolve(id);
    if (found === undefined) continue;
    resolved ??= [...input];
    resolved[i] = itemOf(found);
  }
  return resolved === undefined ? body : { ...(body as Record<string, unknown>), input: resolved };
};
