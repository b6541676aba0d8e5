import { createHash } from 'node:crypto';
import {
  type BlobEntry,
  BlobExists,
  BlobNotFound,
  BlobTooLarge,
  type FileBytesShape,
  partBytes,
  type StoredBytes,
} from '../ports/FileBytes.js';

/**
 * The FileBytes port over what each store does differently (LMDB, PostgreSQL, memory: `BlobParts`), so that cutting
 * a stream into parts, the size bound, the digest and cleaning up after a failure are written once.
 */

/** The part after a blob's last one. */
export const pastEnd = Symbol('pastEnd');

/** What a store keeps of blobs: an entry per blob, and its parts numbered from 0. */
export interface BlobParts {
  /** Records a new blob's entry durably, before any part of it; false when there is one already. */
  begin(blobId: string, startedAt: number): Promise<boolean>;
  /**
   * Stores part `index` durably, only while the blob's entry exists (a blob removed meanwhile gets no part: false).
   * The bytes are the store's from the call on: the caller never changes them.
   */
  put(blobId: string, index: number, bytes: Uint8Array): Promise<boolean>;
  /** Part `index` and whether the blob exists, read together (one snapshot): its bytes, `pastEnd` when the blob has
   * no such part, undefined when there is no blob. With `slice`, only its bytes from `from` up to `to` (fewer when
   * the part ends first): a store reads no more of it than that where it can. */
  part(
    blobId: string,
    index: number,
    slice?: { readonly from: number; readonly to: number },
  ): Promise<Uint8Array | typeof pastEnd | undefined>;
  /** Removes the blob's parts and entry together. */
  remove(blobId: string): Promise<void>;
  /** Up to `limit` entries with ids after `after` (all from the first when undefined), in id order. */
  entries(after: string | undefined, limit: number): Promise<readonly BlobEntry[]>;
}

/** Blob ids are the store's keys: a NUL ends a key range (LMDB) and PostgreSQL's text cannot hold one. */
const checkBlobId = (blobId: string) => {
  if (blobId.length === 0 || blobId.length > 256 || blobId.includes('\u0000'))
    throw new TypeError(`not a blob id: ${JSON.stringify(blobId.slice(0, 64))}`);
};

/** How many entries `list` reads at a time: no snapshot is held while the sweep works through them. */
const listPage = 256;

type Settled = { readonly failure?: unknown; readonly stored: boolean };

export const fileBytesOver = (parts: BlobParts): FileBytesShape => {
  async function* read(blobId: string): AsyncGenerator<Uint8Array> {
    checkBlobId(blobId);
    for (let index = 0; ; index++) {
      const part = await parts.part(blobId, index);
      // Removed before the read began, or while it went on: never a blob cut short.
      if (part === undefined) throw new BlobNotFound(blobId);
      if (part === pastEnd) return;
      yield part;
    }
  }

  const write = async (
    blobId: string,
    chunks: AsyncIterable<Uint8Array>,
    maxBytes: number,
    now: number,
  ): Promise<StoredBytes> => {
    checkBlobId(blobId);
    if (!(await parts.begin(blobId, now))) throw new BlobExists(blobId);
    const hash = createHash('sha256');
    let total = 0;
    let index = 0;
    let part: Buffer | undefined;
    let filled = 0;
    // One part is being stored while the next fills: the disk and the source work at once, and memory holds two
    // parts at most. Its failure is kept as a value (a rejection nobody awaited yet would end the process).
    let storing: Promise<Settled> | undefined;
    const stored = async () => {
      const settled = await storing;
      storing = undefined;
      if (settled === undefined) return;
      if (settled.failure !== undefined) throw settled.failure;
      if (!settled.stored) throw new BlobNotFound(blobId);
    };
    const store = async (bytes: Uint8Array) => {
      await stored();
      storing = parts.put(blobId, index++, bytes).then(
        (done) => ({ stored: done }),
        (failure: unknown) => ({ failure: failure ?? new Error('storing a part failed'), stored: false }),
      );
    };
    try {
      for await (const chunk of chunks) {
        // Checked before the bytes are taken: a source past the bound is not read further (`for await` ends it).
        if (total + chunk.byteLength > maxBytes) throw new BlobTooLarge(blobId, maxBytes);
        total += chunk.byteLength;
        hash.update(chunk);
        // Copied into parts of `partBytes`: the source may reuse its chunk once the next is asked for.
        for (let offset = 0; offset < chunk.byteLength; ) {
          part ??= Buffer.allocUnsafe(partBytes);
          const taken = Math.min(partBytes - filled, chunk.byteLength - offset);
          part.set(chunk.subarray(offset, offset + taken), filled);
          filled += taken;
          offset += taken;
          if (filled === partBytes) {
            await store(part);
            part = undefined;
            filled = 0;
          }
        }
      }
      if (part !== undefined && filled > 0) await store(part.subarray(0, filled));
      await stored();
      return { bytes: total, sha256: hash.digest('hex') };
    } catch (error) {
      // The part being stored lands first (or fails), then everything goes; if removing fails too (the disk is
      // full), the blob is left to the sweep of blobs that no file names.
      await storing;
      await parts.remove(blobId).catch(() => {});
      throw error;
    }
  };

  const readRange = async (blobId: string, offset: number, length: number): Promise<Uint8Array> => {
    checkBlobId(blobId);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0)
      throw new RangeError(`not a byte range: ${offset} for ${length}`);
    const end = offset + length;
    let bytes: Buffer | undefined;
    let filled = 0;
    // Every part but the last holds `partBytes` exactly (write): the range's bytes lie in the parts it covers.
    for (let index = Math.floor(offset / partBytes); filled < length; index++) {
      const from = Math.max(offset - index * partBytes, 0);
      const to = Math.min(end - index * partBytes, partBytes);
      const part = await parts.part(blobId, index, { from, to });
      if (part === undefined) throw new BlobNotFound(blobId);
      if (part === pastEnd) break;
      // A range within one part (most lines) is that part's slice, copied once.
      if (bytes === undefined && part.byteLength === length) return part;
      bytes ??= Buffer.allocUnsafe(length);
      bytes.set(part, filled);
      filled += part.byteLength;
      // Shorter than asked: the blob ends in this part.
      if (part.byteLength < to - from) break;
    }
    return bytes === undefined ? new Uint8Array(0) : bytes.subarray(0, filled);
  };

  return {
    write,
    read,
    readRange,
    async digest(blobId) {
      const hash = createHash('sha256');
      let bytes = 0;
      try {
        for await (const part of read(blobId)) {
          hash.update(part);
          bytes += part.byteLength;
        }
      } catch (error) {
        if (error instanceof BlobNotFound) return undefined;
        throw error;
      }
      return { bytes, sha256: hash.digest('hex') };
    },
    async remove(blobId) {
      checkBlobId(blobId);
      await parts.remove(blobId);
    },
    async *list() {
      let after: string | undefined;
      for (;;) {
        const page = await parts.entries(after, listPage);
        yield* page;
        if (page.length < listPage) return;
        after = page[page.length - 1]?.blobId;
      }
    },
  };
};
