import type { FileBytesShape } from '../../ports/FileBytes.js';
import { type BlobParts, fileBytesOver, pastEnd } from '../../storage/fileBytes.js';
import type { LmdbDatabases } from './databases.js';
import { classifyWriteError } from './storageFault.js';

/**
 * Uploaded files' bytes in the store's own environment (`file.parts`, `file.blobs`), so that `airs backup` copies
 * them in the same read transaction as the log that names them, and every process on the data directory serves them.
 *
 * Each write is a transaction queued on lmdb-js's write thread, as the committer's batches are: a part never waits for
 * a batch nor a batch for a part beyond sharing a commit. With `overlappingSync` off (databases.ts), lmdb-js resolves
 * a write's promise only after the commit that holds it, fsync included: a part is durable when its write resolves.
 */

/** The keys of a blob's parts: [blobId, n] sorts after [blobId] and before [blobId + NUL]. */
const partsOf = (blobId: string) => ({ start: [blobId], end: [`${blobId}\u0000`] });

const written = async <T>(write: Promise<T>): Promise<T> => {
  try {
    return await write;
  } catch (error) {
    throw await classifyWriteError(error);
  }
};

export const lmdbFileBytes = (dbs: LmdbDatabases): FileBytesShape => {
  const { root, fileParts, fileBlobs } = dbs;
  const parts: BlobParts = {
    // Child transactions, as the committer's: one that throws is rolled back alone, never committed in part.
    begin: (blobId, startedAt) =>
      written(
        root.childTransaction(() => {
          if (fileBlobs.get(blobId) !== undefined) return false;
          fileBlobs.put(blobId, startedAt);
          return true;
        }),
      ),
    // Checked in the part's own transaction: a blob the sweep removed while it was written gets no part that nothing
    // would ever find again. The bytes are copied into the transaction when the callback runs.
    put: (blobId, index, bytes) =>
      written(
        root.childTransaction(() => {
          if (fileBlobs.get(blobId) === undefined) return false;
          fileParts.put([blobId, index], bytes as Buffer);
          return true;
        }),
      ),
    part: async (blobId, index, slice) => {
      // A fresh snapshot for each part (another process may have written or removed the blob), and both reads in it.
      // A part is copied out of the map (getBinary): a long download holds no snapshot, so LMDB can reuse pages. A
      // slice is copied alone, from the map's own bytes (getBinaryFast: valid until the next read).
      root.resetReadTxn();
      const bytes =
        slice === undefined ? fileParts.getBinary([blobId, index]) : fileParts.getBinaryFast([blobId, index]);
      if (bytes !== undefined) return slice === undefined ? bytes : Buffer.from(bytes.subarray(slice.from, slice.to));
      return fileBlobs.get(blobId) === undefined ? undefined : pastEnd;
    },
    remove: async (blobId) => {
      await written(
        root.childTransaction(() => {
          // The keys first, then the removals: no cursor is moved under the removals.
          for (const key of Array.from(fileParts.getKeys(partsOf(blobId)))) fileParts.remove(key);
          fileBlobs.remove(blobId);
        }),
      );
    },
    entries: async (after, limit) => {
      root.resetReadTxn();
      return Array.from(
        fileBlobs.getRange(after === undefined ? { limit } : { start: `${after}\u0000`, limit }),
        ({ key, value }) => ({ blobId: key, startedAt: value }),
      );
    },
  };
  return fileBytesOver(parts);
};
