import type { FileBytesShape } from '../../ports/FileBytes.js';
import { StorageFault } from '../../ports/Store.js';
import { type BlobParts, fileBytesOver, pastEnd } from '../../storage/fileBytes.js';
import { type Query, sql } from './db.js';
import { connectionFault, isDiskFault } from './faults.js';

/**
 * Uploaded files' bytes in two tables (schema.ts, migration 3), so that every node serves every file: `file_blobs`,
 * an entry per blob written before its parts, and `file_parts`, its parts, each removed with its entry (ON DELETE
 * CASCADE). Every statement runs on the pool on its own, outside the log's lock and transactions: a part is committed
 * (synchronous_commit on, db.ts: flushed) when its statement returns, and a long upload or download holds no
 * connection between two parts.
 */

/** What a failure means to the caller: a full or failing disk, a database out of reach, or as it was. */
const fault = (error: unknown): unknown =>
  isDiskFault(error)
    ? new StorageFault(`the PostgreSQL database cannot write: ${(error as Error).message}`, { cause: error })
    : connectionFault(error);

const run = async <R extends readonly unknown[]>(query: Query, statement: ReturnType<typeof sql>): Promise<R> => {
  try {
    return await query<R>(statement);
  } catch (error) {
    throw fault(error);
  }
};

/** SQLSTATE foreign_key_violation: the part's blob is gone (removed while it was written). */
const noSuchBlob = (error: unknown) => (error as { code?: unknown }).code === '23503';

export const postgresFileBytes = (query: Query): FileBytesShape => {
  const parts: BlobParts = {
    begin: async (blobId, startedAt) => {
      const rows = await run<{ blob_id: string }[]>(
        query,
        sql`INSERT INTO file_blobs (blob_id, started_at) VALUES (${blobId}, ${startedAt})
            ON CONFLICT (blob_id) DO NOTHING RETURNING blob_id`,
      );
      return rows.length === 1;
    },
    put: async (blobId, index, bytes) => {
      try {
        // A Buffer goes as a binary parameter (pg-protocol): the bytes as they are, not hex.
        await query(sql`INSERT INTO file_parts (blob_id, part, data) VALUES (${blobId}, ${index}, ${bytes})`);
        return true;
      } catch (error) {
        if (noSuchBlob(error)) return false;
        throw fault(error);
      }
    },
    // One statement, so the part and the blob's entry are read in one snapshot. A slice is cut by the server: parts
    // are stored uncompressed out of line (schema.ts), so it reads only the chunks that hold the slice.
    part: async (blobId, index, slice) => {
      const [row] = await run<{ data: Buffer | null }[]>(
        query,
        slice === undefined
          ? sql`SELECT p.data FROM file_blobs b
              LEFT JOIN file_parts p ON p.blob_id = b.blob_id AND p.part = ${index}
              WHERE b.blob_id = ${blobId}`
          : sql`SELECT substring(p.data FROM ${slice.from + 1}::int FOR ${slice.to - slice.from}::int) AS data
              FROM file_blobs b LEFT JOIN file_parts p ON p.blob_id = b.blob_id AND p.part = ${index}
              WHERE b.blob_id = ${blobId}`,
      );
      if (row === undefined) return undefined;
      return row.data ?? pastEnd;
    },
    remove: async (blobId) => {
      await run(query, sql`DELETE FROM file_blobs WHERE blob_id = ${blobId}`);
    },
    entries: async (after, limit) => {
      const rows = await run<{ blob_id: string; started_at: number }[]>(
        query,
        // Every blob id is longer than '' (storage/fileBytes.ts): from the first.
        sql`SELECT blob_id, started_at FROM file_blobs WHERE blob_id > ${after ?? ''} ORDER BY blob_id LIMIT ${limit}`,
      );
      return rows.map((row) => ({ blobId: row.blob_id, startedAt: row.started_at }));
    },
  };
  return fileBytesOver(parts);
};
