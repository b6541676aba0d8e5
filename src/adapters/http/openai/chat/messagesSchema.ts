import { z } from 'zod';
import type { ChatMessage } from '../../../../ports/ModelProvider.js';
import { absent, isObject, type RawIssue, reportedInside, restated, shown } from '../wireFaults.js';
import { boundedList, chatBounds, functionName, functionNamePattern, shortId } from './fieldSchemas.js';

/** The `messages` of a chat completions body: each role's message, its text, and the message airs keeps. */

const textPart = z
  .object(
    {
      type: z.literal('text', {
        error: (issue) =>
          `content part type ${shown(issue.input)} is not supported; airs takes text parts only (no images, audio or files)`,
      }),
      text: z.string('must be a string'),
    },
    'must be an object {"type": "text", "text": ...}',
  )
  .meta({ description: 'A text part. Image, audio and file parts are refused (400).' });

/** A message's content: a string, or text parts (joined with newlines: textOf). */
const content = reportedInside(
  z.union([z.string(), z.array(textPart)], 'must be a string or a list of text parts'),
  1,
  (issue) => issue.path.length > 0, // a fault of a part
).meta({ description: 'A string, or a list of text parts (joined with newlines).' });

const toolCall = z
  .object(
    {
      id: shortId,
      type: z.literal('function', {
        error: (issue) => `tool call type ${shown(issue.input)} is not supported; only function`,
      }),
      function: z.object(
        {
          name: functionName,
          arguments: z
            .string('must be a string (the arguments as JSON text)')
            .meta({ description: 'JSON text, as the model wrote it.' }),
        },
        'must be an object {"name", "arguments"}',
      ),
    },
    'must be an object {"id", "type": "function", "function"}',
  )
  .meta({ description: 'A call of a function tool.' });

/** `name` on a message other than a tool's. */
const participantName = z
  .literal('', 'participant names are not supported; put the name in the content')
  .nullish()
  .meta({ description: 'Participant names are not supported (400); an empty one is ignored.' });

const textMessage = z.object({ name: participantName, role: z.enum(['system', 'developer', 'user']), content });

const assistantMessage = z
  .object({
    name: participantName,
    role: z.literal('assistant'),
    audio: z.null('is not supported').optional().meta({ description: 'Not supported (400).' }),
    function_call: z.null('is not supported').optional().meta({ description: 'Not supported (400).' }),
    refusal: z.string('must be a string or null').nullish(),
    tool_calls: boundedList(
      toolCall,
      chatBounds.toolCallsPerMessage,
      'must be a list of tool calls',
      `must hold at most ${chatBounds.toolCallsPerMessage} tool calls`,
    ).nullish(),
    content: content.nullish().meta({ description: 'Required unless the message has `tool_calls`.' }),
  })
  .check((payload) => {
    const message = payload.value;
    if (absent(message.content) && (message.tool_calls ?? []).length === 0)
      payload.issues.push({
        code: 'custom',
        path: ['content'],
        message: 'is required unless the message has tool_calls',
        input: message.content,
      });
  });

const toolMessageName = 'must be the function’s name: 1 to 64 letters, digits, _ or -';

const toolMessage = z.object({
  name: z
    .string(toolMessageName)
    .regex(functionNamePattern, toolMessageName)
    .nullish()
    .meta({ description: 'The function’s name (LangChain sends it); not forwarded: the call answered names it.' }),
  role: z.literal('tool'),
  tool_call_id: shortId,
  content,
});

export const message = restated(
  z.discriminatedUnion('role', [textMessage, assistantMessage, toolMessage], {
    error: (issue) =>
      !isObject(issue.input)
        ? 'must be a message {"role": ..., "content": ...}'
        : issue.input.role === 'function'
          ? 'function messages are not supported; send tool messages'
          : 'must be one of system, developer, user, assistant, tool',
  }),
  // A message of another role has its name checked first, as a message of a known role has.
  (issue) => {
    if (issue.code !== 'invalid_union' || !isObject(issue.input)) return undefined;
    const name = participantName.safeParse(issue.input.name);
    return name.success
      ? undefined
      : name.error.issues.map((fault): RawIssue => ({ ...fault, path: ['name', ...fault.path], input: undefined }));
  },
);

type ReadMessage = z.output<typeof message>;

export const textOf = (given: z.output<typeof content>) =>
  typeof given === 'string' ? given : given.map((part) => part.text).join('\n');

/** A message read by the schema as airs keeps it: its text joined, and only what is forwarded. */
export const chatMessageOf = (read: ReadMessage): ChatMessage => {
  if (read.role === 'tool') return { role: 'tool', tool_call_id: read.tool_call_id, content: textOf(read.content) };
  if (read.role !== 'assistant') return { role: read.role, content: textOf(read.content) };
  const calls = read.tool_calls ?? [];
  if (absent(read.content)) return { role: 'assistant', content: null, tool_calls: calls };
  const text = textOf(read.content);
  return calls.length === 0
    ? { role: 'assistant', content: text }
    : { role: 'assistant', content: text, tool_calls: calls };
};
