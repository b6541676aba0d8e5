/**
 * One line of a JSONL file: its text, the bytes it was decoded from (which the JSON bounds are checked on) and where
 * they lie in the file (`offset` of its first byte; they end before its newline: what a batch's line keeps to read it
 * again, lineInput.ts), or the fact that it was longer than allowed (its text was never kept) or not UTF-8.
 */
export type JsonLine =
  | { readonly line: number; readonly text: string; readonly bytes: Uint8Array; readonly offset: number }
  | { readonly line: number; readonly tooLong: true }
  | { readonly line: number; readonly notUtf8: true };

const newline = 0x0a;
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * The lines of a stream of bytes, numbered from 1 as a text editor numbers them. Memory is bounded by `maxLineBytes`
 * whatever the file's size: a longer line is reported as too long and skipped up to its end without being kept.
 * Blank lines (a trailing newline, an empty line) are skipped but counted.
 */
export async function* jsonLines(chunks: AsyncIterable<Uint8Array>, maxLineBytes: number): AsyncGenerator<JsonLine> {
  let parts: Uint8Array[] = [];
  let pending = 0;
  let skipping = false;
  let line = 0;
  /** Bytes of the file before the current chunk, and where the current line began. */
  let consumed = 0;
  let lineStart = 0;
  const finish = (): JsonLine | undefined => {
    line++;
    const offset = lineStart;
    if (skipping) {
      skipping = false;
      return { line, tooLong: true };
    }
    const bytes = parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts, pending);
    parts = [];
    pending = 0;
    let text: string;
    try {
      text = decoder.decode(bytes);
    } catch {
      return { line, notUtf8: true };
    }
    if (text.trim().length === 0) return undefined;
    return { line, text, bytes, offset };
  };
  for await (const chunk of chunks) {
    let start = 0;
    while (start < chunk.length) {
      const end = chunk.indexOf(newline, start);
      const stop = end === -1 ? chunk.length : end;
      if (!skipping) {
        if (pending + (stop - start) > maxLineBytes) {
          skipping = true;
          parts = [];
          pending = 0;
        } else if (stop > start) {
          // Copied: the source may reuse its buffer for the next chunk.
          parts.push(chunk.slice(start, stop));
          pending += stop - start;
        }
      }
      if (end === -1) break;
      const done = finish();
      lineStart = consumed + end + 1;
      if (done !== undefined) yield done;
      start = end + 1;
    }
    consumed += chunk.length;
  }
  if (pending > 0 || skipping) {
    const done = finish();
    if (done !== undefined) yield done;
  }
}
