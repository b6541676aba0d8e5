import { z } from 'zod';
import { brokenUnicode } from './wireFaults.js';

/** A create's `metadata` on the wire: its bounds, the words of its refusal and its schema. */

/**
 * A create's `metadata` (`POST /v1/responses`, `POST /v1/chat/completions`), bounded as OpenAI bounds it: an object of
 * at most 16 pairs, each key at most 64 characters, each value a string of at most 512 characters.
 *
 * Keys hold no control characters; values none but tab, line feed and carriage return (text may span lines, and
 * every place airs shows metadata writes it as JSON). NUL is refused everywhere (PostgreSQL cannot store it), and so
 * is an unpaired surrogate (storage would turn it into U+FFFD, and the metadata shown would differ from what was sent).
 */
export const metadataBounds = { pairs: 16, keyChars: 64, valueChars: 512 } as const;

/** Characters, as OpenAI (and JSON Schema's `maxLength`) count them: code points, not UTF-16 units. */
const charsOf = (text: string) => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

const controlInKey = /\p{Cc}/u;
const controlInValue = /(?![\t\n\r])\p{Cc}/u;

const shownKey = (key: string) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);

/** Why a given (not null) `metadata` is refused, in the words of the refusal; undefined when it is within bounds. */
export const metadataRefusal = (value: unknown): string | undefined => {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return 'must be an object of string keys and string values';
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > metadataBounds.pairs)
    return `must hold at most ${metadataBounds.pairs} key-value pairs; it holds ${entries.length}`;
  for (const [key, pair] of entries) {
    if (charsOf(key) > metadataBounds.keyChars)
      return `keys must be at most ${metadataBounds.keyChars} characters long; ${shownKey(key)} is longer`;
    if (controlInKey.test(key) || brokenUnicode.test(key)) return 'keys must be text without control characters';
    if (typeof pair !== 'string') return `the value of ${shownKey(key)} must be a string`;
    if (charsOf(pair) > metadataBounds.valueChars)
      return `values must be at most ${metadataBounds.valueChars} characters long; the value of ${shownKey(key)} is longer`;
    if (controlInValue.test(pair) || brokenUnicode.test(pair))
      return `the value of ${shownKey(key)} must be text without control characters (other than tab and line breaks)`;
  }
  return undefined;
};

/**
 * A create's `metadata` as the document shows it. Its bounds count code points, which zod's `.max` does not: they
 * are checked by metadataRefusal (metadataField), and shown here as JSON Schema counts them.
 */
export const metadataSchema = z
  .record(
    z.string().meta({ maxLength: metadataBounds.keyChars }),
    z.string().meta({ maxLength: metadataBounds.valueChars }),
  )
  .meta({
    maxProperties: metadataBounds.pairs,
    description:
      'Up to 16 pairs; keys at most 64 characters, without control characters; values strings of at most 512 ' +
      'characters, without control characters other than tab and line breaks (400 `invalid_request_error`, ' +
      '`param: "metadata"`, beyond). Kept with the request and shown in its Response (create, retrieve, stream, ' +
      'cancel); never sent to a model.',
  });

/** `metadata` as a field of a create's body: absent or null is none; beyond the bounds, refused naming `metadata`. */
export const metadataField = z.preprocess((value, payload) => {
  const refusal = value === undefined || value === null ? undefined : metadataRefusal(value);
  if (refusal !== undefined) payload.addIssue({ code: 'custom', message: refusal, input: value });
  return value;
}, metadataSchema.nullish());
