import { z } from 'zod';
import type { FunctionTool, ToolChoice } from '../../../../ports/ModelProvider.js';
import { absent, reportedInside, restatingFaults, shown } from '../wireFaults.js';
import {
  boundedList,
  chatBounds,
  functionName,
  jsonSchemaObject,
  optionalBoolean,
  optionalString,
} from './fieldSchemas.js';

/** The `tools` and `tool_choice` of a chat completions body, the rule that ties them, and the tool airs keeps. */

/** A tool read by the schema as airs keeps it: unset (null) fields left out. */
export const functionToolOf = ({ function: read }: z.output<typeof functionTools>[number]): FunctionTool => {
  const fn: { -readonly [K in keyof FunctionTool['function']]: FunctionTool['function'][K] } = { name: read.name };
  if (!absent(read.description)) fn.description = read.description;
  if (!absent(read.parameters)) fn.parameters = read.parameters;
  if (!absent(read.strict)) fn.strict = read.strict;
  return { type: 'function', function: fn };
};

export const functionTools = (() => {
  // The names of the tools read so far in the list being read. zod reads a list in order and at once, so a
  // duplicate is refused where it stands, before the rest of its tool; the list forgets them as it starts.
  const named = new Set<string>();
  const tool = z
    .object(
      {
        type: z.literal('function', {
          error: (issue) => `tool type ${shown(issue.input)} is not supported; airs takes function tools only`,
        }),
        function: z.object(
          {
            name: functionName.check((payload) => {
              const name = payload.value;
              if (payload.issues.length > 0) return; // not a name
              if (named.has(name))
                payload.issues.push({ code: 'custom', message: `another tool is already named ${name}`, input: name });
              named.add(name);
            }),
            description: optionalString,
            parameters: jsonSchemaObject,
            strict: optionalBoolean,
          },
          'must be an object {"name", "parameters"}',
        ),
      },
      'must be an object {"type": "function", "function": ...}',
    )
    .meta({ description: 'A function the model may call. Other tool types are refused (400).' });
  return boundedList(
    tool,
    chatBounds.tools,
    'must be a list of function tools',
    `must hold at most ${chatBounds.tools} tools`,
    () => named.clear(),
  );
})();

// The restatement is registered on the union as it runs: after its check (a check makes a new definition).
export const toolChoice = reportedInside(
  restatingFaults(
    z.union(
      [
        z.enum(['none', 'auto', 'required']),
        z.object({
          type: z.literal('function'),
          function: z.object({ name: z.string('must name one of the tools') }),
        }),
      ],
      'must be none, auto, required or {"type": "function", "function": {"name"}}',
    ),
  ),
  1,
  (issue) => issue.path.length > 1, // a fault of the function's name
);

/**
 * The rule across fields of a body whose fields were read: a function `tool_choice` names one of `tools`, and
 * `required` needs tools. The fault, or undefined.
 */
export const toolChoiceFault = (body: {
  readonly tools?: readonly { readonly function: { readonly name: string } }[] | null | undefined;
  readonly tool_choice?: ToolChoice | null | undefined;
}): { readonly path: PropertyKey[]; readonly message: string } | undefined => {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  if (typeof choice === 'object' && choice !== null)
    return tools.some((tool) => tool.function.name === choice.function.name)
      ? undefined
      : { path: ['tool_choice', 'function', 'name'], message: 'must name one of the tools' };
  return choice === 'required' && tools.length === 0
    ? { path: ['tool_choice'], message: 'required needs tools' }
    : undefined;
};
