import { z } from 'zod';
import type { ChatMessage, ToolCall } from '../../../ports/ModelProvider.js';
import { absent, brokenUnicode, isObject, reportedInside, restatingFaults, shown } from './wireFaults.js';

/**
 * The `input` of a Responses create body: its items (messages, function calls and their outputs, item references),
 * the chat conversation they make, and the rule that it holds text.
 */

const inputTextPart = z
  .looseObject(
    {
      type: z.enum(['input_text', 'output_text'], {
        error: (issue) => `part type ${shown(issue.input)} is not supported; airs takes text (input_text) only`,
      }),
      text: z.string('must be a string'),
    },
    'must be an object {"type": "input_text", "text": ...}',
  )
  .meta({ description: 'A text part. Images, files and audio parts are refused (airs takes text only).' });

/** A message's content, or a call's output: a string, or text parts (joined with newlines: textOfContent). */
const textContent = reportedInside(
  z.union([z.string(), z.array(inputTextPart)], 'must be a string or a list of input_text parts'),
  1,
  (issue) => issue.path.length > 0, // a fault of a part
);

const textOfContent = (given: z.output<typeof textContent>) =>
  typeof given === 'string' ? given : given.map((part) => part.text).join('\n');

const inputMessage = z
  .looseObject({
    type: z.literal('message').optional(),
    role: z.enum(['user', 'assistant', 'system', 'developer'], 'must be one of user, assistant, system, developer'),
    content: textContent.meta({ description: 'A string, or a list of text parts (joined with newlines).' }),
  })
  .meta({
    description: 'A message of the conversation (`id`, `status` and the like, as in an output item, are ignored).',
  });

const callIdRule = 'must be a non-empty string of at most 256 characters';
const callId = z
  .string(callIdRule)
  .min(1, callIdRule)
  .refine((id) => id.length <= 256, callIdRule)
  .meta({ maxLength: 256 });

/** The items of the list being read and the call ids it holds so far: zod reads a list in order and at once. */
const inputCalls = new Set<string>();

const inputFunctionCall = z
  .looseObject({
    type: z.literal('function_call'),
    call_id: callId
      .check((payload) => {
        if (payload.issues.length === 0) inputCalls.add(payload.value);
      })
      .meta({ description: 'The id of the call, which its `function_call_output` names.' }),
    name: z.string('must be a non-empty string').min(1, 'must be a non-empty string'),
    arguments: z
      .string('must be a string (JSON text)')
      .meta({ description: 'The arguments as JSON text, as the model wrote them.' }),
  })
  .meta({
    description:
      'A function call the model made (as in a Response’s `output`): sent as the assistant message’s `tool_calls` ' +
      '(calls in a row, and the assistant message just before them, are one message).',
  });

const inputFunctionCallOutput = z
  .looseObject({
    type: z.literal('function_call_output'),
    call_id: callId
      .check((payload) => {
        const id = payload.value;
        if (payload.issues.length === 0 && !inputCalls.has(id))
          payload.issues.push({
            code: 'custom',
            message: `no function_call with call_id "${id}" comes before this output`,
            input: id,
          });
      })
      .meta({ description: 'A `call_id` of a `function_call` earlier in `input`.' }),
    output: textContent.meta({ description: 'What the function returned.' }),
  })
  .meta({ description: 'The result of a function call: sent as a `tool` message.' });

/** The longest id a reference may name (longer ones name nothing). */
export const itemReferenceIdChars = 300;

/**
 * An `item_reference` as the schema reads it: one the parser did not replace by the item it names (it does so before
 * the schema reads the body, see input.ts) names nothing the caller may see.
 */
const inputItemReference = z
  .looseObject({
    type: z.literal('item_reference'),
    id: z
      .string('must be the id of an output item')
      .min(1, 'must be the id of an output item')
      .check((payload) => {
        const id = payload.value;
        if (payload.issues.length === 0)
          payload.issues.push({
            code: 'custom',
            message:
              `no output item ${JSON.stringify(id.slice(0, 100))} among this account's completed responses (they ` +
              'live 24 hours); send the item itself (with the Vercel AI SDK: providerOptions.openai.store = false)',
            input: id,
          });
      })
      .meta({ description: 'The id of an output item (`msg_…`, `fc_…`).' }),
  })
  .meta({
    description:
      'An output item of one of the account’s completed Responses (they live 24 hours), read as that item: the ' +
      'Vercel AI SDK sends these for earlier answers by default. Any other reference is refused (400).',
  });

const inputItem = z.discriminatedUnion(
  'type',
  [inputMessage, inputFunctionCall, inputFunctionCallOutput, inputItemReference],
  {
    error: (issue) =>
      !isObject(issue.input)
        ? 'must be a message {"role": ..., "content": ...} or an item'
        : issue.input.type === 'reasoning'
          ? 'reasoning items are not supported; leave them out'
          : `item type ${shown(issue.input.type)} is not supported; airs takes messages, function_call and ` +
            'function_call_output',
  },
);

// Restated within the list: a union (`input`'s) keeps its options' faults as they were said.
export const inputItems = restatingFaults(
  z.preprocess(
    (value) => {
      inputCalls.clear();
      return value;
    },
    z.array(inputItem).min(1, 'must not be an empty list'),
  ),
);

/** The items of an `input` list, read by the schema. */
export type ResponsesInputItems = z.output<typeof inputItems>;

/**
 * A Responses `input` list read into a chat conversation (the port's messages). A run of `function_call` items
 * becomes one assistant message with `tool_calls` (joined to the assistant message just before it, if any), and
 * each `function_call_output` a `tool` message, as chat completions write a turn that calls tools.
 */
export const conversationOf = (items: ResponsesInputItems): ChatMessage[] => {
  const messages: ChatMessage[] = [];
  for (const item of items) {
    if (item.type === 'function_call') {
      const call: ToolCall = {
        id: item.call_id,
        type: 'function',
        function: { name: item.name, arguments: item.arguments },
      };
      const last = messages.at(-1);
      // A turn's calls (and the text before them) are one assistant message in chat completions.
      if (last?.role === 'assistant') {
        const turn = last as { tool_calls?: ToolCall[] };
        turn.tool_calls = [...(turn.tool_calls ?? []), call];
      } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
    } else if (item.type === 'function_call_output')
      messages.push({ role: 'tool', tool_call_id: item.call_id, content: textOfContent(item.output) });
    else if (item.type !== 'item_reference') messages.push({ role: item.role, content: textOfContent(item.content) });
  }
  return messages;
};

/** The text of a message, `''` for an assistant message that only calls tools. */
const textOfMessage = (message: ChatMessage): string => message.content ?? '';

/**
 * The conversation a body's `input` and `instructions` make: undefined for a string input without instructions
 * (a plain prompt). `instructions` is a leading system message; an empty one is none.
 */
export const responsesConversationOf = (body: {
  readonly input: string | ResponsesInputItems;
  readonly instructions?: string | null | undefined;
}): ChatMessage[] | undefined => {
  const instructions = absent(body.instructions) || body.instructions === '' ? undefined : body.instructions;
  const given =
    typeof body.input === 'string'
      ? instructions === undefined
        ? undefined
        : [{ role: 'user' as const, content: body.input }]
      : conversationOf(body.input);
  return instructions === undefined ? given : [{ role: 'system', content: instructions }, ...(given ?? [])];
};

export const inputFault = (body: {
  readonly input: string | ResponsesInputItems;
  readonly instructions?: string | null | undefined;
}): string | undefined => {
  const messages = responsesConversationOf(body);
  const texts = messages?.map(textOfMessage) ?? [body.input as string];
  const callsTools = messages?.some((m) => m.role === 'tool' || (m.role === 'assistant' && m.tool_calls)) === true;
  if (!callsTools && texts.every((text) => text.trim() === '')) return 'must not be empty';
  if (texts.some((text) => brokenUnicode.test(text)))
    return 'must be valid Unicode text; it contains an unpaired surrogate';
  return undefined;
};
