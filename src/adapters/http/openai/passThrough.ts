import type { SubmitInput } from '../../../app/Requests.js';
import { InvalidRequest } from '../../../domain/errors.js';
import type { PassThroughOf } from '../../../modelPassThrough.js';

/**
 * The extra body fields a model passes through (its `passThrough`, modelPassThrough.ts), read off a chat completions
 * or Responses body before the body's own schema reads the rest: a field the model lists is not the schema's to refuse
 * (`unknown parameter`), and one it does not list stays in the body, refused (chat) or ignored (Responses) as before.
 * Each value is checked as a JSON value within bounds of its own, then kept with the request's parameters and sent
 * upstream as given (`GenerationParams.extraBody`); its bytes also count in the stored input's `maxPromptBytes`.
 */

/** How deep and how large one passed-through value may be (a vLLM `guided_json` schema is a few levels, a few KB). */
export const passThroughBounds = { maxDepth: 32, maxBytes: 256 * 1024 } as const;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Why `value` is not a JSON value within the depth bound, or undefined. Recursion stops at the bound. */
const shapeFault = (value: unknown, depth: number): string | undefined => {
  if (typeof value === 'number')
    return Number.isFinite(value) ? undefined : 'must be a JSON value; it holds a number too large for JSON';
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= passThroughBounds.maxDepth)
    return `is nested deeper than ${passThroughBounds.maxDepth} levels, the limit of a passed-through value`;
  for (const item of Array.isArray(value) ? value : Object.values(value)) {
    const fault = shapeFault(item, depth + 1);
    if (fault !== undefined) return fault;
  }
  return undefined;
};

const faultOf = (value: unknown): string | undefined => {
  const fault = shapeFault(value, 0);
  if (fault !== undefined) return fault;
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  return bytes > passThroughBounds.maxBytes
    ? `is ${bytes} bytes as JSON; a passed-through value is at most ${passThroughBounds.maxBytes}`
    : undefined;
};

/**
 * `parse` (a face's body parser) run over the body less the fields its model passes through, and those fields,
 * checked, added to the parsed input's parameters. A `null` field counts as absent (as everywhere in a body): it is
 * not sent. The body is copied only when it gives such a field.
 */
export const withPassThrough = <T extends { readonly input: SubmitInput }>(
  body: unknown,
  passThroughOf: PassThroughOf | undefined,
  parse: (body: unknown) => T | InvalidRequest,
): T | InvalidRequest => {
  const names =
    passThroughOf !== undefined && isObject(body) && typeof body.model === 'string'
      ? passThroughOf(body.model)
      : undefined;
  const given = names?.filter((name) => Object.hasOwn(body as object, name));
  if (given === undefined || given.length === 0) return parse(body);
  const rest = { ...(body as Record<string, unknown>) };
  for (const name of given) delete rest[name];
  const parsed = parse(rest);
  if (parsed instanceof InvalidRequest) return parsed;
  const fields: [string, unknown][] = [];
  for (const name of given) {
    const value = (body as Record<string, unknown>)[name];
    if (value === null) continue;
    const fault = faultOf(value);
    if (fault !== undefined) return new InvalidRequest({ message: `${name}: ${fault}`, details: { param: name } });
    fields.push([name, value]);
  }
  if (fields.length === 0) return parsed;
  // fromEntries defines each key (a name is never `__proto__`: the config refuses it).
  const extraBody = Object.fromEntries(fields);
  return { ...parsed, input: { ...parsed.input, params: { ...parsed.input.params, extraBody } } };
};
