import { z } from 'zod';
import { isObject } from './wireFaults.js';

/** Field schemas that the parts of a Responses create body share (a name, optional values, a JSON Schema). */

const functionNameRule = 'must be at most 64 characters, without spaces or control characters';

/** A function's name, as OpenAI limits it (upstreams refuse longer ones, after the request was queued). */
export const functionName = z
  .string('must be a non-empty string')
  .min(1, 'must be a non-empty string')
  .refine((name) => name.length <= 64, functionNameRule)
  .regex(/^[^\s\p{Cc}]*$/u, functionNameRule)
  .meta({ maxLength: 64, description: 'At most 64 UTF-16 units, without spaces or control characters.' });

export const optionalString = z.string('must be a string').nullish();
export const optionalBoolean = z.boolean('must be true or false').nullish();

/** A JSON Schema: any object, forwarded as given (the very object: read as a record, it would be copied). */
export const jsonSchemaObject = z
  .unknown()
  .refine(isObject, 'must be a JSON Schema object')
  .meta({ type: 'object', description: 'A JSON Schema.' });

export const numberIn = (min: number, max: number) => {
  const rule = `must be a number from ${min} to ${max}`;
  return z.number(rule).min(min, rule).max(max, rule).nullish();
};

/** A field refused whenever it is given (not null). */
export const refused = (message: string, description: string) =>
  z
    .null(message)
    .optional()
    .meta({ description: `Not supported (400): ${description}` });
