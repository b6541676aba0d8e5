/**
 * An upstream's body cut off before it costs memory. The `openai` SDK reads a whole answer into one string before it
 * parses it, and each event of a stream whole; an upstream that sends without end would hold them without bound. The
 * bytes are counted as the JSON's strings decode (an escape counts the bytes it stands for: `\n` one, `\u20ac`
 * three), so that the bound is the answer's own size plus its envelope, however the upstream escapes; the body itself
 * is then at most six times the bound (`\u0001`, six bytes for one).
 */

const backslash = 0x5c;
const lineFeed = 0x0a;
const carriageReturn = 0x0d;
const letterU = 0x75;

/** The value of a hex digit (anything else counts as 0: the count only needs to stay within six bytes per byte). */
const hexValue = (byte: number): number =>
  byte >= 0x30 && byte <= 0x39
    ? byte - 0x30
    : byte >= 0x61 && byte <= 0x66
      ? byte - 0x57
      : byte >= 0x41 && byte <= 0x46
        ? byte - 0x37
        : 0;

/** The UTF-8 bytes of one UTF-16 unit a `\uXXXX` escape names (a surrogate is half of a four-byte character). */
const utf8BytesOfUnit = (unit: number): number =>
  unit < 0x80 ? 1 : unit < 0x800 || (unit >= 0xd800 && unit <= 0xdfff) ? 2 : 3;

/** How far a backslash is looked for byte by byte before a native search: escapes come close together or not at all. */
const nearBytes = 64;

/** Where the next backslash from `from` is (`bytes.length` if none). */
const nextBackslash = (bytes: Buffer, from: number): number => {
  const near = Math.min(bytes.length, from + nearBytes);
  for (let i = from; i < near; i++) if (bytes[i] === backslash) return i;
  if (near === bytes.length) return near;
  const at = bytes.indexOf(backslash, near);
  return at < 0 ? bytes.length : at;
};

/** Two line ends in a row (a carriage return and its line feed are one): the blank line that ends an event. */
const blankLines = [Buffer.from('\n\n'), Buffer.from('\r\r'), Buffer.from('\n\r')];
const isLineEnd = (byte: number | undefined) => byte === lineFeed || byte === carriageReturn;

/**
 * Counts a body's bytes as they decode, chunk by chunk: of the whole body, or (`perEvent`) of the server-sent event
 * not yet ended, the count starting again after each blank line. Line ends are never inside a JSON string (they are
 * escaped there), so an event's end is found in the raw bytes; only what follows a chunk's last blank line is counted.
 * A body of prose costs about a millisecond per 10 MB; one dense with escapes, a few nanoseconds per byte.
 */
export const createDecodedCount = (perEvent: boolean) => {
  let decoded = 0;
  // Where an escape is: 0 none; 1 after its backslash; 2 to 5 after `\u` and (inEscape - 2) of its hex digits, whose
  // value is `unit` so far.
  let inEscape = 0;
  let unit = 0;
  let lastByte: number | undefined;
  // The last chunk ended on a blank line's carriage return: a line feed that begins this one is part of it.
  let lineFeedOwed = false;
  /** Where the bytes after the chunk's last blank line begin (0 if it has none, or only a line feed owed). */
  const eventStart = (bytes: Buffer): number => {
    const first = bytes[0];
    let start = isLineEnd(lastByte) && isLineEnd(first) && !(lastByte === carriageReturn && first === lineFeed) ? 1 : 0;
    for (const blank of blankLines) {
      const at = bytes.lastIndexOf(blank);
      if (at >= 0) start = Math.max(start, at + 2);
    }
    if (start === 0) return lineFeedOwed && first === lineFeed ? -1 : 0;
    if (bytes[start - 1] === carriageReturn && bytes[start] === lineFeed) start++;
    return start;
  };
  return {
    /** Adds a chunk; answers the decoded bytes of the body (or of the event not yet ended) so far. */
    add(chunk: Uint8Array): number {
      const bytes = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      let i = 0;
      if (perEvent && bytes.length > 0) {
        i = eventStart(bytes);
        if (i > 0) {
          decoded = 0;
          inEscape = 0;
          unit = 0;
        } else if (i < 0) i = 1;
        lastByte = bytes[bytes.length - 1];
        lineFeedOwed = i === bytes.length && lastByte === carriageReturn;
      }
      decoded += bytes.length - i;
      while (i < bytes.length) {
        if (inEscape === 0) {
          i = nextBackslash(bytes, i);
          if (i < bytes.length) inEscape = 1;
        } else if (inEscape === 1) {
          // `\n`, `\"`: two bytes, one decoded; `\u` waits for its digits.
          inEscape = bytes[i] === letterU ? 2 : 0;
          decoded -= inEscape === 2 ? 2 : 1;
        } else {
          unit = unit * 16 + hexValue(bytes[i] as number);
          decoded--;
          if (inEscape < 5) inEscape++;
          else {
            decoded += utf8BytesOfUnit(unit);
            inEscape = 0;
            unit = 0;
          }
        }
        i++;
      }
      return decoded;
    },
  };
};

/**
 * `body`, erroring with `passed()` as soon as its decoded bytes (of the whole body, or of one event: `perEvent`) pass
 * `maxBytes`; the upstream's body is cancelled then, which closes its connection.
 */
export const boundedBody = (
  body: ReadableStream<Uint8Array>,
  maxBytes: number,
  perEvent: boolean,
  passed: () => Error,
): ReadableStream<Uint8Array> => {
  const reader = body.getReader();
  const count = createDecodedCount(perEvent);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) return controller.close();
      if (count.add(value) <= maxBytes) return controller.enqueue(value);
      const error = passed();
      controller.error(error);
      reader.cancel(error).catch(() => {});
    },
    cancel: (reason) => reader.cancel(reason),
  });
};
