/**
 * Where an uploaded file's bytes live: in the store itself (LMDB: two databases of the same environment, so that
 * `airs backup` copies them with the log; PostgreSQL: two tables, so that every node serves them; memory: a map).
 * The file's metadata (id, size, digest, name) is an event of the log, written once `write` has resolved; a blob that
 * no file names (an upload that failed, a crash in the middle of one) is found by `list` and removed by a sweep.
 *
 * A blob is written once, whole, and never changed: it is stored in parts of at most `partBytes`, so that neither
 * writing nor reading holds more than a part or two in memory, whatever the blob's size.
 */

/** What was stored: its size and SHA-256 (hex). */
export type StoredBytes = { readonly bytes: number; readonly sha256: string };

/** A blob that exists, and when its writing began (ms), for sweeping blobs no file names (a crash mid-upload). */
export type BlobEntry = { readonly blobId: string; readonly startedAt: number };

/** The most bytes of one stored part (the last part of a blob may be shorter). */
export const partBytes = 1024 * 1024;

/** The source gave more than the blob may hold: nothing of it is kept. */
export class BlobTooLarge extends Error {
  override name = 'BlobTooLarge';
  constructor(
    readonly blobId: string,
    readonly maxBytes: number,
  ) {
    super(`blob ${blobId} is larger than ${maxBytes} bytes`);
  }
}

/** No blob of that id (never written, removed, or removed while it was being read). */
export class BlobNotFound extends Error {
  override name = 'BlobNotFound';
  constructor(readonly blobId: string) {
    super(`no blob ${blobId}`);
  }
}

/** A write named a blob that exists already: nothing was written, and the blob that exists is untouched. */
export class BlobExists extends Error {
  override name = 'BlobExists';
  constructor(readonly blobId: string) {
    super(`blob ${blobId} exists already`);
  }
}

export interface FileBytesShape {
  /**
   * Writes the chunks as they come (memory bounded by one part, whatever the total), in parts of at most
   * `partBytes`; resolves once everything is durable (LMDB: committed and synced; PostgreSQL: committed with
   * synchronous_commit on). More than `maxBytes`: stops reading, removes what it wrote, rejects with `BlobTooLarge`.
   * Any other failure (the iterable throws: the client went away; the disk is full) removes what was written and
   * rethrows. `now` is the start time recorded (`BlobEntry.startedAt`). A blob id that exists: `BlobExists`.
   */
  write(blobId: string, chunks: AsyncIterable<Uint8Array>, maxBytes: number, now: number): Promise<StoredBytes>;
  /** The bytes in order, a part at a time (never the whole blob in memory). Unknown blob: rejects (`BlobNotFound`),
   * also when the blob is removed while it is read (never a blob cut short). */
  read(blobId: string): AsyncIterable<Uint8Array>;
  /**
   * The `length` bytes from byte `offset` of the blob (fewer when the blob ends first, none past its end), read from
   * the parts that hold them only: a batch's line is read again where its input file holds it (app/batches/
   * lineInput.ts). Unknown blob: rejects (`BlobNotFound`).
   */
  readRange(blobId: string, offset: number, length: number): Promise<Uint8Array>;
  /** Size and digest recomputed by reading the blob through (for `replay --verify`), undefined when absent. */
  digest(blobId: string): Promise<StoredBytes | undefined>;
  /** Removes the blob (nothing when there is none). */
  remove(blobId: string): Promise<void>;
  /** Every blob present, in blob id order (for the sweep of blobs that no file names). */
  list(): AsyncIterable<BlobEntry>;
}
