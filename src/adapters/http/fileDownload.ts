import type { FileState } from '../../domain/file/state.js';
import { BlobNotFound } from '../../ports/FileBytes.js';

/** Text as an RFC 5987 value: percent-encoded UTF-8 (encodeURIComponent leaves a few characters it may not hold). */
const utf8HeaderValue = (text: string) =>
  encodeURIComponent(text).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/**
 * A file's bytes as a download, streamed a part at a time (a 200 MB file never sits whole in memory). The first part
 * is read before answering: bytes gone meanwhile (the file deleted a moment ago) give `undefined`, for the caller's
 * 404, never a 200 whose body breaks off. The name goes in the header in plain ASCII and exactly in UTF-8 (a header
 * holds Latin-1 only).
 */
export const fileDownload = async (
  file: FileState,
  bytes: AsyncIterable<Uint8Array>,
  headers: Record<string, string>,
): Promise<Response | undefined> => {
  const iterator = bytes[Symbol.asyncIterator]();
  let pending: IteratorResult<Uint8Array> | undefined;
  try {
    pending = await iterator.next();
  } catch (error) {
    if (error instanceof BlobNotFound) return undefined;
    throw error;
  }
  const body = new ReadableStream<Uint8Array>({
    pull: async (controller) => {
      const next = pending ?? (await iterator.next());
      pending = undefined;
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    cancel: async () => {
      await iterator.return?.();
    },
  });
  return new Response(body, {
    status: 200,
    headers: {
      ...headers,
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(file.bytes),
      'Content-Disposition': `attachment; filename="${file.filename.replace(/[^\x20-\x7e]|["\\]/g, '_')}"; filename*=UTF-8''${utf8HeaderValue(file.filename)}`,
    },
  });
};
