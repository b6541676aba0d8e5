import { createCipheriv, createHash } from 'node:crypto';
import type { StoredBytes } from '../../src/ports/FileBytes.js';

/**
 * Bytes for the file-bytes features that both processes of a test can make alike: `length` bytes that look random,
 * made from `seed` (AES-256-CTR over zeros), so another process writes a blob the test checks without sending it over.
 */
export const seededBytes = (seed: string, length: number): Buffer => {
  const key = createHash('sha256').update(seed).digest();
  return createCipheriv('aes-256-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(length));
};

/** Chunk sizes that never line up with a part: one byte, odd sizes, and one larger than a part. */
const oddSizes = [1, 7, 65_537, 1_048_577, 333_333, 4_093, 250_001];

/** `bytes` as a source of odd-sized chunks, each a copy (as a socket gives them), handed out a turn apart. */
export async function* inOddChunks(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  for (let offset = 0, i = 0; offset < bytes.length; i++) {
    const size = oddSizes[i % oddSizes.length] as number;
    yield bytes.slice(offset, offset + size);
    offset += size;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

export const storedBytesOf = (bytes: Uint8Array): StoredBytes => ({
  bytes: bytes.length,
  sha256: createHash('sha256').update(bytes).digest('hex'),
});

/** Everything a blob's read yields, and the size of its largest piece. */
export const readAll = async (parts: AsyncIterable<Uint8Array>) => {
  const pieces: Uint8Array[] = [];
  for await (const piece of parts) pieces.push(piece);
  return { bytes: Buffer.concat(pieces), largest: Math.max(0, ...pieces.map((piece) => piece.length)) };
};
