/** Characters of a long text escaped and handed on at once. */
export const pieceChars = 64 * 1024;

/** A stand-in for the long text while the rest of the line is made: a NUL no text of the line is likely to hold. */
const markerOf = (n: number) => `\u0000airs-text-${n}`;

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;

/** `JSON.stringify(entryOf(text))` and a newline, as UTF-8, whole. */
const wholeLine = (text: string, entryOf: (text: string) => unknown) =>
  Buffer.from(`${JSON.stringify(entryOf(text))}\n`);

/**
 * A JSONL line, the JSON of `entryOf(text)` and a newline, as UTF-8 pieces: a long `text` (an answer, whose size no
 * bound of airs' own promises) never becomes part of one string with the rest of the line, whose JSON escapes could
 * make it six times longer. The line is made around a marker in the text's place, and the text is escaped where the
 * marker stood, `pieceChars` at a time (a surrogate pair never cut, so each piece escapes as the whole would). The
 * bytes are exactly those of the whole line.
 */
export function* jsonLinePieces(text: string, entryOf: (text: string) => unknown): Generator<Uint8Array> {
  if (text.length <= pieceChars) {
    yield wholeLine(text, entryOf);
    return;
  }
  // The marker must stand once in the line: another is tried if the rest of the line holds its text too.
  for (let n = 0; n < 4; n++) {
    const marker = JSON.stringify(markerOf(n)).slice(1, -1);
    const skeleton = JSON.stringify(entryOf(markerOf(n)));
    const at = skeleton.indexOf(marker);
    if (at === -1) break;
    if (skeleton.indexOf(marker, at + 1) !== -1) continue;
    yield Buffer.from(skeleton.slice(0, at));
    for (let start = 0; start < text.length; ) {
      let end = Math.min(text.length, start + pieceChars);
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end++;
      yield Buffer.from(JSON.stringify(text.slice(start, end)).slice(1, -1));
      start = end;
    }
    yield Buffer.from(`${skeleton.slice(at + marker.length)}\n`);
    return;
  }
  yield wholeLine(text, entryOf);
}
