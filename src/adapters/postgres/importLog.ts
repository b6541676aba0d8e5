import type { StoredEvent } from '../../domain/events.js';
import type { LogSource } from '../../storage/logSource.js';
import type { VerifyReport } from '../../storage/verifyReport.js';
import { type Db, sql } from './db.js';
import { chunksOf, compareKeptWithSource, compareWithSource } from './importCheck.js';
import { CopyDiffers, SourceDamaged } from './importErrors.js';
import { writePage } from './importPage.js';
import { checkEmpty } from './importTarget.js';
import { lockSpace, migrateIn } from './schema.js';
import { verifyInSnapshot } from './verify.js';
import { writeAll } from './writeAll.js';
import { Writes } from './writes.js';

/**
 * `airs migrate`: an LMDB data directory copied into an empty PostgreSQL database, in ONE transaction.
 *
 * - The log is read from one LMDB read transaction (one snapshot of the source, whatever a process writes meanwhile),
 *   record by record, and appended to the events table a page at a time, as it is (same sequence numbers, same
 *   payloads as the store writes them).
 * - Every view is rebuilt from those events, page by page, by the code the PostgreSQL store writes its batches with:
 *   each request's state before the page is read back from the requests table (written by the pages before, in this
 *   transaction), the page's events are folded by the machine's own step (`tryEvolve`), the account and file events
 *   and the request changes are projected (`projectAccountEvent`, `projectFileEvent`, `projectRequestChange`, and
 *   `projectWebhookEvent` for webhook endpoints and deliveries) through the store's overlay into a `Writes`, and `writeAll` (writeAll.ts) writes them: rows, counters, usage per day,
 *   idempotency index, log head. A batch's view is its own events folded by its machine (`evolveBatch`) and its lines'
 *   counts, summed from each of its lines' changes of status as the writer sums them (`countsDeltaOf`), then
 *   projected (`projectBatchChange`).
 * - What is kept beside the log and not in it is copied from the source: the texts (a request's prompt or response, as
 *   its record holds it now), the credentials (password and session hashes) and the keys' last uses.
 * - Then the copy is checked in the same transaction before it commits: every request row against the source's record
 *   (view compared as encoded bytes, the same text), every batch, file, webhook endpoint and delivery against the
 *   source's (as JSON), and the whole database by `airs replay --verify`'s own check (`verifyInSnapshot`). Any difference rolls everything back.
 *
 * Atomic: the schema (made here by the store's own migrations) and every row commit together or not at all; a copy
 * that fails, is interrupted or whose process dies leaves the database as it was (PostgreSQL rolls back a transaction
 * whose connection ends), so a half-copied database never exists. The schema's advisory lock and the log's writer lock
 * are held throughout: a node started on the database meanwhile waits, then finds the copy.
 *
 * Memory does not grow with the data: events are read and written a page at a time, and a page's Fetched/Writes hold
 * only what its events touch; texts are read from the source when their page is written, in chunks of bounded bytes.
 * (The final check holds accounts, keys and sessions in maps, as `airs replay --verify` does.)
 */

// The copy in parts: the target checked empty (importTarget.ts), the log a page at a time (importPage.ts), the copy
// checked against its source (importCheck.ts); what it throws (importErrors.ts) is re-exported, as importers name it.
export { CopyDiffers, SourceDamaged, TargetNotEmpty } from './importErrors.js';

/** Where a copy is: events copied so far (of the log's `total`), requests checked against the source, then the whole
 * copy verified (`done` 0). */
export type ImportProgress = {
  readonly phase: 'events' | 'checking' | 'verifying';
  readonly done: number;
  readonly total: number;
};

export type ImportOptions = {
  /** The database as a person reads it (no password), for messages. */
  readonly where: string;
  /** Events per page (tests: tiny, so that requests span pages). */
  readonly pageEvents?: number;
  /** Text bytes per statement, at most (one text larger than this goes alone). */
  readonly chunkBytes?: number;
  readonly onProgress?: (progress: ImportProgress) => void;
  /** Called after the copy is written and checked, before the commit (tests: a failure here must leave nothing). */
  readonly beforeCommit?: () => void | Promise<void>;
};

export type ImportSummary = VerifyReport & { readonly credentials: number };

/**
 * Copies the store `source` reads (an LMDB data directory, read by its adapter's logSource.ts) into the database of `db` (a
 * pool of one connection is enough), in one transaction, and closes the source's snapshot; throws `TargetNotEmpty`,
 * `SourceDamaged` or `CopyDiffers` (nothing committed) or the database's own error.
 */
export const importLog = async (db: Db, source: LogSource, options: ImportOptions): Promise<ImportSummary> => {
  const pageEvents = options.pageEvents ?? 2_000;
  const chunkBytes = options.chunkBytes ?? 8 * 1024 * 1024;
  try {
    return await db.begin(async (query) => {
      // No node migrates the schema or appends to the log until this commits (or rolls back).
      await query(sql`SELECT pg_advisory_xact_lock(${lockSpace.schema}::int, 0)`);
      await checkEmpty(query, options.where);
      await migrateIn(query, options.where);
      await query(sql`SELECT pg_advisory_xact_lock(${lockSpace.log}::int, 1)`);

      const total = source.lastSeq();
      const progress = (phase: ImportProgress['phase'], done: number) => options.onProgress?.({ phase, done, total });
      let page: StoredEvent[] = [];
      let lastSeq = 0;
      let expected = 1;
      const flushPage = async () => {
        if (page.length === 0) return;
        await writePage(query, source, page, lastSeq, chunkBytes);
        lastSeq = (page.at(-1) as StoredEvent).seq;
        page = [];
        progress('events', lastSeq);
      };
      progress('events', 0);
      for (const { key, visit } of source.records()) {
        try {
          visit((event) => {
            if (event.seq !== expected)
              throw new SourceDamaged(`the log has a gap: expected event ${expected}, found ${event.seq}`);
            expected++;
            page.push({ ...event });
          });
        } catch (error) {
          if (error instanceof SourceDamaged) throw error;
          throw new SourceDamaged(`log record ${String(key)} cannot be read: ${(error as Error).message}`);
        }
        if (key !== expected - 1)
          throw new SourceDamaged(`log record ${String(key)}: its last event is ${expected - 1}`);
        if (page.length >= pageEvents) await flushPage();
      }
      await flushPage();
      if (lastSeq !== total)
        throw new SourceDamaged(`the log ends at event ${lastSeq} but the data directory says ${total}`);

      // Kept beside the log, not in it: password and session hashes, keys' last uses.
      let credentials = 0;
      for await (const rows of chunksOf(source.credentials(), 1_000)) {
        const writes = new Writes();
        for (const { key, value } of rows) writes.credentials.set(key, value);
        credentials += rows.length;
        await writeAll(query, writes, { commands: [] }, { lastSeq });
      }
      for await (const keyUses of chunksOf(source.keyUses(), 1_000)) {
        await writeAll(query, new Writes(), { commands: [], keyUses }, { lastSeq });
      }

      // The copy checked before it commits: against the source, then as `airs replay --verify` checks a database.
      let compared = 0;
      await compareWithSource(query, source, 1_000, () => {
        if (++compared % 10_000 === 0) progress('checking', compared);
      });
      await compareKeptWithSource(query, source, 'batch', 1_000);
      await compareKeptWithSource(query, source, 'file', 1_000);
      await compareKeptWithSource(query, source, 'webhook endpoint', 1_000);
      await compareKeptWithSource(query, source, 'webhook delivery', 1_000);
      progress('verifying', 0);
      const report = await verifyInSnapshot(query, 1_000);
      if (report.differences.length > 0)
        throw new CopyDiffers(
          `the copy does not verify (${report.differences.length} difference(s), the first: ${report.differences[0]}); nothing was written`,
        );
      await options.beforeCommit?.();
      return { ...report, credentials };
    });
  } finally {
    source.close();
  }
};
