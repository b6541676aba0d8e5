import { closeSync, existsSync, fstatSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { privateFileMode } from './fileModes.js';

/**
 * Checks of the data file before LMDB maps it. LMDB trusts its file: a truncated file is mapped past its end and the
 * first read of a missing page kills the process with SIGBUS, a zeroed or overwritten header can crash it, and an
 * emptied file is silently made into a new, empty database (every account, key and request gone). These checks read
 * the two meta pages LMDB itself starts from, and a marker written once the directory holds a database, so such a
 * file is refused with a message instead.
 *
 * The file's length is judged by the pages the meta pages point at (the roots of LMDB's two trees), not by the last
 * page they count: LMDB may leave the file shorter than that (a page allocated and freed in one transaction is never
 * written, and stays listed as free), so a healthy file can end before it. A root page is always written before the
 * meta page that names it, and LMDB never shrinks its file, so a root past the end is truncation. Damage past these
 * checks (a cut that leaves both roots) is left to LMDB and `airs replay --verify` (docs/decisions.md).
 */

/** The data file cannot be trusted: restore from a backup. */
export class DataFileDamaged extends Error {
  // Recognised by name, so that the CLI can tell it apart without loading the store.
  override name = 'DataFileDamaged';
}

/** Written beside the data file once it holds a database: a missing or empty data file then means data was lost. */
const markerFile = (dataDir: string) => join(dataDir, 'airs.mdb.created');

// The layout of an LMDB meta page as lmdb-js builds LMDB (64-bit; page header of 24 bytes): magic, version, then
// the records of the free-space tree and of the main tree (48 bytes each: the page size sits in the first one's
// padding, each ends with its root page), then the last page counted and the transaction id (not read here).
const magic = 0xbeefc0de;
const dataVersion = 2;
const metaAt = 24;
const treesAt = metaAt + 24;
const treeBytes = 48;
const rootInTree = 40;
const fields = {
  magic: metaAt,
  version: metaAt + 4,
  pageSize: treesAt,
  freeRoot: treesAt + rootInTree,
  mainRoot: treesAt + treeBytes + rootInTree,
};
const metaBytes = treesAt + 2 * treeBytes;
const minPageSize = 512;
const maxPageSize = 65_536;
/** A tree without a root (empty). */
const noPage = 0xffff_ffff_ffff_ffffn;
/** Pages 0 and 1 are the meta pages: never a tree's root. */
const firstTreePage = 2n;

type Meta = { readonly pageSize: number; readonly roots: readonly bigint[] };

const readMeta = (page: Buffer): Meta | string => {
  if (page.readUInt32LE(fields.magic) !== magic) return 'its header is not an LMDB header';
  if (page.readUInt32LE(fields.version) !== dataVersion) return 'its header has an unknown LMDB version';
  const pageSize = page.readUInt32LE(fields.pageSize);
  if (pageSize < minPageSize || pageSize > maxPageSize || (pageSize & (pageSize - 1)) !== 0)
    return 'its header names an impossible page size';
  const roots = [page.readBigUInt64LE(fields.freeRoot), page.readBigUInt64LE(fields.mainRoot)].filter(
    (root) => root !== noPage,
  );
  if (roots.some((root) => root < firstTreePage)) return 'its header names a meta page as the root of a tree';
  return { pageSize, roots };
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
    // The meta pages first (one read: the second starts one page in, and a page is at most 64 KiB), the size after:
    // a server committing meanwhile writes a root page before the meta page that names it, so the size read next
    // covers every root read here.
    const head = Buffer.alloc(maxPageSize + metaBytes);
    const headBytes = readSync(fd, head, 0, head.length, 0);
    const size = fstatSync(fd).size;
    if (size === 0) {
      // Empty and never marked: LMDB is creating it this moment (a first start), or a first start died here.
      if (existsSync(markerFile(dataDir))) throw damaged(file, 'it is empty, and this directory held a database');
      return;
    }
    if (size < 2 * minPageSize || headBytes < metaBytes) throw damaged(file, `it has only ${size} bytes`);
    const meta0 = readMeta(head);
    if (typeof meta0 === 'string') throw damaged(file, `the first meta page: ${meta0}`);
    if (headBytes < meta0.pageSize + metaBytes) throw damaged(file, `it has only ${size} bytes`);
    const meta1 = readMeta(head.subarray(meta0.pageSize));
    if (typeof meta1 === 'string') throw damaged(file, `the second meta page: ${meta1}`);
    if (meta1.pageSize !== meta0.pageSize) throw damaged(file, 'its two meta pages disagree on the page size');
    // Both meta pages: the older one's roots were written by an earlier commit, and the file never shrinks.
    const lastRoot = [...meta0.roots, ...meta1.roots].reduce((a, b) => (b > a ? b : a), firstTreePage - 1n);
    const needed = (lastRoot + 1n) * BigInt(meta0.pageSize);
    if (BigInt(size) < needed) throw damaged(file, `it has ${size} bytes, its header says it uses ${needed}`);
  } finally {
    closeSync(fd);
  }
};

/** Notes that the directory now holds a database (once; see `checkDataFile`). */
export const markDataFile = (dataDir: string): void => {
  if (!existsSync(markerFile(dataDir)))
    writeFileSync(markerFile(dataDir), `${new Date().toISOString()}\n`, { mode: privateFileMode });
};
