import type { z } from 'zod';
import { InvalidRequest } from '../../../domain/errors.js';

/**
 * A body's refusal from the faults its zod schema found: one fault, the first in the order the body's fields are
 * checked, with the field at fault in `param` (`messages[1].tool_calls[0].id`) and in the message, as OpenAI names
 * it. The message of each fault is the schema's own (the words of each rule are given with it).
 */

/** Where each top-level field's faults come, and where those of unknown fields come (before the field named). */
export type CheckOrder = { readonly places: ReadonlyMap<string, number>; readonly unknown: number };

/** `unknownBefore` left out: the body's unknown fields are accepted (never a fault). */
export const checkOrderOf = (shape: Readonly<Record<string, unknown>>, unknownBefore?: string): CheckOrder => {
  const fields = Object.keys(shape);
  const before = unknownBefore === undefined ? fields.length : fields.indexOf(unknownBefore);
  if (before < 0) throw new Error(`checkOrderOf: no field ${unknownBefore}`);
  return { places: new Map(fields.map((field, place) => [field, place])), unknown: before - 0.5 };
};

const placeOf = (issue: z.core.$ZodIssue, order: CheckOrder) => {
  const [field] = issue.path;
  if (field === undefined) return issue.code === 'unrecognized_keys' ? order.unknown : -1;
  return order.places.get(String(field)) ?? order.unknown;
};

/** An object's unknown keys are refused before its fields are read (the body's own have their place instead). */
const precedes = (issue: z.core.$ZodIssue, place: number, than: z.core.$ZodIssue, thanPlace: number) =>
  place !== thanPlace ? place < thanPlace : issue.code === 'unrecognized_keys' && than.code !== 'unrecognized_keys';

const paramOf = (issue: z.core.$ZodIssue) => {
  const keys = issue.code === 'unrecognized_keys' ? [...issue.path, (issue.keys[0] ?? '').slice(0, 100)] : issue.path;
  return keys
    .map((key, i) => (typeof key === 'number' ? `[${key}]` : i === 0 ? String(key) : `.${String(key)}`))
    .join('');
};

export const refusalOf = (issues: readonly z.core.$ZodIssue[], order: CheckOrder): InvalidRequest => {
  let first = issues[0] as z.core.$ZodIssue;
  let firstPlace = placeOf(first, order);
  for (const issue of issues) {
    const place = placeOf(issue, order);
    if (precedes(issue, place, first, firstPlace)) {
      first = issue;
      firstPlace = place;
    }
  }
  // A fault of the body itself (not an object) names no field.
  if (first.path.length === 0 && first.code !== 'unrecognized_keys')
    return new InvalidRequest({ message: first.message });
  const param = paramOf(first);
  return new InvalidRequest({ message: `${param}: ${first.message}`, details: { param } });
};
