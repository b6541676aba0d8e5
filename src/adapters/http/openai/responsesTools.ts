import { z } from 'zod';
import { functionName, jsonSchemaObject, optionalBoolean, optionalString } from './responsesFields.js';
import { reportedInside, restatingFaults, shown } from './wireFaults.js';

/** The `tools` and `tool_choice` of a Responses create body, and the rule that ties them. */

/** The names of the tools read so far in the list being read (zod reads a list in order and at once). */
const toolNames = new Set<string>();

const functionTool = z
  .looseObject(
    {
      type: z.literal('function', {
        error: (issue) =>
          `tool type ${shown(issue.input)} is not supported; airs runs function tools only ("type": "function")`,
      }),
      name: functionName
        .check((payload) => {
          const name = payload.value;
          if (payload.issues.length > 0) return; // not a name
          if (toolNames.has(name))
            payload.issues.push({ code: 'custom', message: `the function name "${name}" is given twice`, input: name });
          toolNames.add(name);
        })
        .meta({ description: 'Unique among `tools`; at most 64 characters, no spaces.' }),
      description: optionalString,
      parameters: jsonSchemaObject.nullish(),
      strict: optionalBoolean.meta({
        description: 'Forwarded as given; left out, the upstream’s default applies (chat completions: not strict).',
      }),
    },
    'must be an object {"type": "function", "name": ..., "parameters": ...}',
  )
  .meta({ description: 'A function the model may call. Other tool types (hosted tools) are refused (400).' });

export const functionTools = z.preprocess(
  (value) => {
    toolNames.clear();
    return value;
  },
  z.array(functionTool, 'must be a list of function tools'),
);

// The restatement is registered on the union as it runs: after its check (a check makes a new definition).
export const toolChoice = reportedInside(
  restatingFaults(
    z.union(
      [
        z.enum(['none', 'auto', 'required']),
        z.looseObject({ type: z.literal('function'), name: z.string('must name one of the functions in tools') }),
      ],
      'must be "none", "auto", "required" or {"type": "function", "name": ...}; other choices are not supported',
    ),
  ),
  1,
  (issue) => issue.path[0] === 'name', // a fault of the function's name
);

/**
 * The rule across fields of a body whose fields were read: a function `tool_choice` names one of `tools`, and
 * `required` needs tools. The fault, or undefined.
 */
export const toolChoiceFault = (body: {
  readonly tools?: readonly { readonly name: string }[] | null | undefined;
  readonly tool_choice?: z.output<typeof toolChoice> | null | undefined;
}): { readonly path: PropertyKey[]; readonly message: string } | undefined => {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  if (typeof choice === 'object' && choice !== null)
    return tools.some((tool) => tool.name === choice.name)
      ? undefined
      : { path: ['tool_choice', 'name'], message: 'must name one of the functions in tools' };
  return choice === 'required' && tools.length === 0
    ? { path: ['tool_choice'], message: '"required" needs tools' }
    : undefined;
};
