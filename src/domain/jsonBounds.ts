/**
 * How deep and how wide a JSON body may be (contract 15): checked on its bytes, before it is parsed. The same check
 * for a request's body (adapters/http/jsonBody.ts) and a batch's line (app/batches/lineRules.ts).
 */
export type JsonBounds = {
  /** Levels of nesting: `{}` and `[]` are one level, `{"a": []}` two. */
  readonly maxDepth: number;
  /** Values in all: the top-level one, every array element and every object member's value. */
  readonly maxValues: number;
};

/** A body beyond a bound: which one, and a message for the client naming it. */
export type JsonBoundExceeded = { readonly bound: 'maxJsonDepth' | 'maxJsonValues'; readonly message: string };

const quote = 0x22;
const backslash = 0x5c;
const comma = 0x2c;
const openArray = 0x5b;
const openObject = 0x7b;
const closeArray = 0x5d;
const closeObject = 0x7d;
const space = 0x20;
const tab = 0x09;
const lineFeed = 0x0a;
const carriageReturn = 0x0d;

/**
 * The index of the quote that closes the string whose contents start at `from`, or -1. A quote is escaped when an
 * odd number of backslashes stands right before it; found with the native `indexOf`, so a long prompt costs little.
 * Each backslash is counted back at most once (it lies between two quotes), so the scan stays linear.
 */
const closingQuote = (bytes: Uint8Array, from: number): number => {
  for (let at = bytes.indexOf(quote, from); at !== -1; at = bytes.indexOf(quote, at + 1)) {
    let backslashes = 0;
    while (at - backslashes - 1 >= from && bytes[at - backslashes - 1] === backslash) backslashes++;
    if (backslashes % 2 === 0) return at;
  }
  return -1;
};

/**
 * Whether a JSON text is deeper or has more values than `bounds` allow, from one pass over its bytes that allocates
 * nothing: what `JSON.parse` would build is never built for a body beyond a bound (a 4 MB array nested 2 million
 * levels deep parses into about 116 MB). Exact for valid JSON: a container counts one level while open, values are
 * the top-level one plus one per array element and object member (the first item of a non-empty container, then
 * one per comma); strings, keys included, are skipped whole, escapes and all. Text that is not valid JSON may be
 * counted loosely; the parser refuses it afterwards anyway. Stops at the first bound passed.
 */
export const jsonBoundExceeded = (bytes: Uint8Array, bounds: JsonBounds): JsonBoundExceeded | undefined => {
  let depth = 0;
  let values = 1;
  // Just after `[` or `{`: the next token, unless it closes the container, is the container's first item.
  let awaitingFirst = false;
  const length = bytes.length;
  for (let i = 0; i < length; i++) {
    const byte = bytes[i] as number;
    if (byte === space || byte === lineFeed || byte === carriageReturn || byte === tab) continue;
    if (byte === closeArray || byte === closeObject) {
      depth--;
      awaitingFirst = false;
      continue;
    }
    if (awaitingFirst || byte === comma) {
      awaitingFirst = false;
      if (++values > bounds.maxValues) return tooManyValues(bounds);
    }
    if (byte === quote) {
      const end = closingQuote(bytes, i + 1);
      if (end === -1) return undefined;
      i = end;
    } else if (byte === openArray || byte === openObject) {
      if (++depth > bounds.maxDepth) return tooDeep(bounds);
      awaitingFirst = true;
    }
  }
  return undefined;
};

const tooDeep = (bounds: JsonBounds): JsonBoundExceeded => ({
  bound: 'maxJsonDepth',
  message: `the JSON body is nested deeper than ${bounds.maxDepth} levels, the limit (maxJsonDepth)`,
});

const tooManyValues = (bounds: JsonBounds): JsonBoundExceeded => ({
  bound: 'maxJsonValues',
  message: `the JSON body holds more than ${bounds.maxValues} values, the limit (maxJsonValues)`,
});

/**
 * A batch's line holds a request's body one level down, beside three values of its own: `{"custom_id", "method",
 * "url", "body": <body>}`. Checked with one more level and four more values, the body it holds gets the very bounds
 * its route gives a body (contract 16: each body is checked as its route checks it).
 */
export const lineBoundsOf = (bounds: JsonBounds): JsonBounds => ({
  maxDepth: bounds.maxDepth + 1,
  maxValues: bounds.maxValues + 4,
});

/** Whether a batch's line is beyond the bounds its body gets (`bounds`, a body's), named as a body's would be. */
export const lineBoundExceeded = (bytes: Uint8Array, bounds: JsonBounds): JsonBoundExceeded | undefined => {
  const beyond = jsonBoundExceeded(bytes, lineBoundsOf(bounds));
  if (beyond === undefined) return undefined;
  return beyond.bound === 'maxJsonDepth' ? tooDeep(bounds) : tooManyValues(bounds);
};
