import { z } from 'zod';
import { isObject } from '../wireFaults.js';

/** The bounds of a chat completions body and the field schemas its parts share (lists, names, ids, JSON Schemas). */

/** Bounds of what airs keeps with a request (the text of messages and schemas is bounded as stored text). */
export const chatBounds = {
  /** OpenAI's own limit. */
  tools: 128,
  toolCallsPerMessage: 128,
  stopSequences: 16,
  /** Ids of tool calls, `user`: short identifiers, not text. */
  idChars: 256,
  userChars: 256,
  maxTokens: 2_147_483_647,
} as const;

/** At most `max` UTF-16 units, as airs counts an identifier (zod's `.max` counts code points). */
export const unitsAtMost = (schema: z.ZodString, max: number, message: string) =>
  schema.refine((value) => value.length <= max, message).meta({ description: `At most ${max} UTF-16 units.` });

/**
 * A list whose length is checked before its items: one too long is refused as such, whatever it holds. (zod's own
 * `.max` refuses first too, but its fault ends the read of all that holds the list, restatements included.)
 * `onRead` runs as the list is about to be read.
 */
export const boundedList = <T extends z.ZodType>(
  item: T,
  max: number,
  notList: string,
  tooLong: string,
  onRead?: () => void,
) =>
  z.preprocess(
    (value, payload) => {
      onRead?.();
      if (Array.isArray(value) && value.length > max)
        payload.addIssue({ code: 'custom', message: tooLong, input: value });
      return value;
    },
    // Refused above first, so this .max never fires: it shows the bound in the document.
    z.array(item, notList).max(max, tooLong),
  );

export const optionalString = z.string('must be a string').nullish();
export const optionalBoolean = z.boolean('must be true or false').nullish();

export const functionNamePattern = /^[A-Za-z0-9_-]{1,64}$/;
const functionNameRule = 'must be 1 to 64 letters, digits, _ or -';
/** A function's name as OpenAI takes it. */
export const functionName = z.string(functionNameRule).regex(functionNamePattern, functionNameRule);

export const shortId = unitsAtMost(
  z.string('must be a non-empty string').min(1, 'must be a non-empty string'),
  chatBounds.idChars,
  `must be at most ${chatBounds.idChars} characters long`,
);

/**
 * A JSON Schema: any object, forwarded as given (the very object: read as a record, it would be copied key by key).
 * Its type is shown in the document by hand, as the check is not one zod can show.
 */
export const jsonSchemaObject = z
  .unknown()
  .refine(isObject, 'must be a JSON schema object')
  .meta({ type: 'object' })
  .nullish()
  .meta({ description: 'A JSON Schema.' });
