import { InvalidRequest } from '../../../domain/errors.js';

/**
 * A create's `metadata` (`POST /v1/responses`, `POST /v1/chat/completions`), bounded as OpenAI bounds it: an object of
 * at most 16 pairs, each key at most 64 characters, each value a string of at most 512 characters. Kept with the
 * request as the JSON text of the object (RequestQueued.metadata), in the order given; a Response shows it.
 *
 * Keys hold no control characters; values none but tab, line feed and carriage return (text may span lines, and
 * every place airs shows metadata writes it as JSON). NUL is refused everywhere (PostgreSQL cannot store it), and so
 * is an unpaired surrogate (storage would turn it into U+FFFD, and the metadata shown would differ from what was sent).
 */
export const metadataBounds = { pairs: 16, keyChars: 64, valueChars: 512 } as const;

const invalid = (message: string) =>
  new InvalidRequest({ message: `metadata: ${message}`, details: { param: 'metadata' } });

/** Characters, as OpenAI counts them (code points, not UTF-16 units). */
const charsOf = (text: string) => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

const controlInKey = /\p{Cc}/u;
const controlInValue = /(?![\t\n\r])\p{Cc}/u;
const brokenUnicode = /\p{Cs}/u;

const shownKey = (key: string) => JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);

/**
 * `metadata` of a create's body as the text kept with the request; `undefined` when absent, `null` or empty (a
 * Response then shows `{}`); a refusal naming `metadata` when it is not within OpenAI's bounds.
 */
export const metadataOf = (value: unknown): string | undefined | InvalidRequest => {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value))
    return invalid('must be an object of string keys and string values');
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length > metadataBounds.pairs)
    return invalid(`must hold at most ${metadataBounds.pairs} key-value pairs; it holds ${entries.length}`);
  for (const [key, pair] of entries) {
    if (charsOf(key) > metadataBounds.keyChars)
      return invalid(`keys must be at most ${metadataBounds.keyChars} characters long; ${shownKey(key)} is longer`);
    if (controlInKey.test(key) || brokenUnicode.test(key))
      return invalid('keys must be text without control characters');
    if (typeof pair !== 'string') return invalid(`the value of ${shownKey(key)} must be a string`);
    if (charsOf(pair) > metadataBounds.valueChars)
      return invalid(
        `values must be at most ${metadataBounds.valueChars} characters long; the value of ${shownKey(key)} is longer`,
      );
    if (controlInValue.test(pair) || brokenUnicode.test(pair))
      return invalid(
        `the value of ${shownKey(key)} must be text without control characters (other than tab and line breaks)`,
      );
  }
  return entries.length === 0 ? undefined : JSON.stringify(Object.fromEntries(entries));
};

/** The metadata a request keeps, as its Response shows it (`{}` when it has none). */
export const shownMetadataOf = (kept: string | undefined): Record<string, string> => {
  if (kept === undefined) return {};
  try {
    return JSON.parse(kept) as Record<string, string>;
  } catch {
    return {};
  }
};
