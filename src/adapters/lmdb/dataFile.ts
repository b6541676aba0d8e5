import { closeSync, existsSync, fstatSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Checks of the data file before LMDB maps it. LMDB trusts its file: a truncated file is mapped past its end and the
 * first read of a missing page kills the process with SIGBUS, a zeroed or overwritten header can crash it, and an
 * emptied file is silently made into a new, empty database (every account, key and request gone). These checks read
 * the two meta pages LMDB itself starts from, and a marker written once the directory holds a database, so such a
 * file is refused with a message instead.
 */

/** The data file cannot be trusted: restore from a backup. */
export class DataFileDamaged extends Error {
  // Recognised by name, so that the CLI can tell it apart without loading the store.
  override name = 'DataFileDamaged';
}

/** Written beside the data file once it holds a database: a missing or empty data file then means data was lost. */
const markerFile = (dataDir: string) => join(dataDir, 'airs.mdb.created');

// The layout of an LMDB meta page as lmdb-js builds LMDB (64-bit; page header of 24 bytes): magic, version, the
// page size (in the free-space database's record), the last page used and the transaction id.
const magic = 0xbeefc0de;
const dataVersion = 2;
const metaAt = 24;
const fields = {
  magic: metaAt,
  version: metaAt + 4,
  pageSize: metaAt + 24,
  lastPage: metaAt + 120,
  txnId: metaAt + 128,
};
const metaBytes = fields.txnId + 8;

type Meta = { readonly pageSize: number; readonly lastPage: number; readonly txnId: number };

const readMeta = (page: Buffer): Meta | string => {
  if (page.readUInt32LE(fields.magic) !== magic) return 'its header is not an LMDB header';
  if (page.readUInt32LE(fields.version) !== dataVersion) return 'its header has an unknown LMDB version';
  const pageSize = page.readUInt32LE(fields.pageSize);
  if (pageSize < 512 || pageSize > 65_536 || (pageSize & (pageSize - 1)) !== 0)
    return 'its header names an impossible page size';
  return {
    pageSize,
    lastPage: Number(page.readBigUInt64LE(fields.lastPage)),
    txnId: Number(page.readBigUInt64LE(fields.txnId)),
  };
};

const damaged = (file: string, why: string) =>
  new DataFileDamaged(
    `the data file ${file} is damaged (${why}); airs will not open it: restore the data directory from a backup`,
  );

/** Throws `DataFileDamaged` if the data file of `dataDir` must not be opened; a directory without one is new. */
export const checkDataFile = (dataDir: string, file: string): void => {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (existsSync(markerFile(dataDir))) throw damaged(file, 'it is missing, and this directory held a database');
    return;
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) {
      // Empty and never marked: LMDB is creating it this moment (a first start), or a first start died here.
      if (existsSync(markerFile(dataDir))) throw damaged(file, 'it is empty, and this directory held a database');
      return;
    }
    const first = Buffer.alloc(metaBytes);
    if (size < 2 * 512 || readSync(fd, first, 0, metaBytes, 0) < metaBytes)
      throw damaged(file, `it has only ${size} bytes`);
    const meta0 = readMeta(first);
    if (typeof meta0 === 'string') throw damaged(file, `the first meta page: ${meta0}`);
    const second = Buffer.alloc(metaBytes);
    if (readSync(fd, second, 0, metaBytes, meta0.pageSize) < metaBytes)
      throw damaged(file, `it has only ${size} bytes`);
    const meta1 = readMeta(second);
    if (typeof meta1 === 'string') throw damaged(file, `the second meta page: ${meta1}`);
    if (meta1.pageSize !== meta0.pageSize) throw damaged(file, 'its two meta pages disagree on the page size');
    const current = meta1.txnId > meta0.txnId ? meta1 : meta0;
    const needed = (current.lastPage + 1) * current.pageSize;
    if (size < needed) throw damaged(file, `it has ${size} bytes, its header says it uses ${needed}`);
  } finally {
    closeSync(fd);
  }
};

/** Notes that the directory now holds a database (once; see `checkDataFile`). */
export const markDataFile = (dataDir: string): void => {
  if (!existsSync(markerFile(dataDir))) writeFileSync(markerFile(dataDir), `${new Date().toISOString()}\n`);
};
