import { lineReferenceOf } from '../../../app/batches/lineInput.js';
import { BlobNotFound, type FileBytesShape } from '../../../ports/FileBytes.js';
import type { ShownText } from './views/viewModels.js';

/** The start of a text, at most `max` UTF-16 units, never cutting a character in two. */
export const shownText = (text: string, max: number): ShownText => {
  let end = Math.min(text.length, max);
  if (end < text.length && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end--;
  return { text: text.slice(0, end), totalChars: text.length };
};

const lenient = new TextDecoder('utf-8');

/**
 * A queued batch line's input, as its page shows it: the line is not copied into its request (batches/lineInput.ts),
 * so its start is read from the batch's input file, no more bytes than `max` characters can take (3 bytes a UTF-16
 * unit at most), whatever the line's size. Undefined when the reference or the file's bytes are gone.
 */
export const shownLine = async (
  files: FileBytesShape,
  referenceText: string,
  max: number,
): Promise<(ShownText & { readonly line: number; readonly file: string }) | undefined> => {
  const reference = lineReferenceOf(referenceText);
  if (reference === undefined) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = await files.readRange(reference.file, reference.offset, Math.min(reference.bytes, 3 * max));
  } catch (error) {
    if (error instanceof BlobNotFound) return undefined;
    throw error;
  }
  const shown = shownText(lenient.decode(bytes), max);
  return {
    ...shown,
    totalBytes: reference.bytes,
    totalChars: bytes.byteLength < reference.bytes ? Number.NaN : shown.totalChars,
    line: reference.line,
    file: reference.file,
  };
};
