/**
 * The `wait` preference of a `Prefer` header (RFC 7240): how many seconds the caller is willing to wait for an answer.
 *
 * The header is a comma-separated list of preferences, `token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )`,
 * names compared without case, a `word` a token or a quoted string; several `Prefer` headers are one list (the Fetch
 * API joins them with ", "). A preference given twice counts once, the first time (RFC 7240, 2). Anything this does
 * not understand is ignored, as the RFC asks: a malformed `wait` is no wait, never an error.
 *
 * Bounded: only the first `maxHeaderChars` characters are read (Node already bounds all headers together), and the
 * scan is one pass, without regular expressions that could backtrack.
 */

/** More than any `Prefer` a client sends; the rest of a longer header is not read. */
const maxHeaderChars = 4_096;
/** `wait` values longer than this are taken as "very long" (capped), not parsed into a huge number. */
const maxDigits = 9;

/** Splits at `separator` outside quoted strings (a quoted value may hold commas and semicolons). */
const splitOutsideQuotes = (text: string, separator: string): string[] => {
  const parts: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted && c === '\\') i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === separator) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
};

const unquoted = (word: string): string =>
  word.length >= 2 && word.startsWith('"') && word.endsWith('"') ? word.slice(1, -1).replace(/\\(.)/g, '$1') : word;

/**
 * The seconds of the header's `wait` preference, or `undefined` when there is none, or when it is not a whole number
 * of seconds (`wait=0` included: nothing to wait for). Not capped: the caller caps it at its own bound.
 */
export const preferredWaitSeconds = (header: string | null | undefined): number | undefined => {
  if (header === null || header === undefined || header === '') return undefined;
  const seen = new Set<string>();
  for (const preference of splitOutsideQuotes(header.slice(0, maxHeaderChars), ',')) {
    // The preference itself is what comes before its first parameter.
    const [head = ''] = splitOutsideQuotes(preference, ';');
    const equals = head.indexOf('=');
    const name = (equals === -1 ? head : head.slice(0, equals)).trim().toLowerCase();
    if (name === '' || seen.has(name)) continue;
    seen.add(name);
    if (name !== 'wait') continue;
    if (equals === -1) return undefined;
    const value = unquoted(head.slice(equals + 1).trim());
    if (value === '' || ![...value].every((c) => c >= '0' && c <= '9')) return undefined;
    const digits = value.replace(/^0+/, '');
    if (digits === '') return undefined;
    return digits.length > maxDigits ? Number.MAX_SAFE_INTEGER : Number(digits);
  }
  return undefined;
};
