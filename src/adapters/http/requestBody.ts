import type { IncomingMessage } from 'node:http';
import { assertBodySize, type H3Event } from 'h3';

/** The client went away before its body arrived whole: nobody is left to read an answer. */
export class ClientGone extends Error {
  override name = 'ClientGone';
}

/** The body passed the byte limit (found while it streamed, or from its declared length). */
export class BodyTooLarge extends Error {
  override name = 'BodyTooLarge';
}

/**
 * Reads a body from Node's request into one Buffer, refusing it as soon as it passes `maxBytes` (a chunked body
 * has no length to check first). The bytes, not a string, so that invalid UTF-8 can be told from text: decoding
 * first would turn it into U+FFFD silently.
 */
const readNodeBody = (req: IncomingMessage, maxBytes: number) =>
  new Promise<Buffer>((resolve, reject) => {
    if (req.readableEnded || req.destroyed) {
      reject(new ClientGone('the request body was no longer readable'));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData).off('end', onEnd).off('error', onClose).off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        req.pause();
        reject(new BodyTooLarge());
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      if (!req.complete) reject(new ClientGone('the connection closed before the whole body arrived'));
      else resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onClose = () => {
      cleanup();
      reject(new ClientGone('the connection closed before the whole body arrived'));
    };
    req.on('data', onData).once('end', onEnd).once('error', onClose).once('close', onClose);
  });

/** The body's bytes within the limit: from Node's request on a real socket, from the web Request in-process. */
export const readBodyBytes = async (event: H3Event, maxBytes: number): Promise<Buffer> => {
  const node = (event.req as { runtime?: { node?: { req?: IncomingMessage } } }).runtime?.node?.req;
  if (node !== undefined) return readNodeBody(node, maxBytes);
  try {
    assertBodySize(event, maxBytes);
    return Buffer.from(await event.req.arrayBuffer());
  } catch (error) {
    if (error instanceof Error && (error as { status?: unknown }).status === 413) throw new BodyTooLarge();
    throw error;
  }
};
