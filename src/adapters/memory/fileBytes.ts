import type { FileBytesShape } from '../../ports/FileBytes.js';
import { type BlobParts, fileBytesOver, pastEnd } from '../../storage/fileBytes.js';

/** Uploaded files' bytes in a map of this process, with the LMDB and PostgreSQL stores' semantics (storage/fileBytes.ts). */
export const memoryFileBytes = (): FileBytesShape => {
  const blobs = new Map<string, { readonly startedAt: number; readonly parts: Uint8Array[] }>();
  const parts: BlobParts = {
    begin: async (blobId, startedAt) => {
      if (blobs.has(blobId)) return false;
      blobs.set(blobId, { startedAt, parts: [] });
      return true;
    },
    put: async (blobId, index, bytes) => {
      const blob = blobs.get(blobId);
      if (blob === undefined) return false;
      // A copy of exactly its length: a short last part does not keep the writer's whole part buffer alive.
      blob.parts[index] = Uint8Array.prototype.slice.call(bytes);
      return true;
    },
    part: async (blobId, index, slice) => {
      const blob = blobs.get(blobId);
      if (blob === undefined) return undefined;
      // A copy, as the other stores give: the reader may keep or change it.
      const part = blob.parts[index];
      if (part === undefined) return pastEnd;
      return slice === undefined ? part.slice() : part.slice(slice.from, slice.to);
    },
    remove: async (blobId) => {
      blobs.delete(blobId);
    },
    entries: async (after, limit) =>
      [...blobs.keys()]
        .filter((blobId) => after === undefined || blobId > after)
        .sort()
        .slice(0, limit)
        .map((blobId) => ({ blobId, startedAt: blobs.get(blobId)?.startedAt ?? 0 })),
  };
  return fileBytesOver(parts);
};
