import type { Batch, CommandOutcome } from '../../ports/Store.js';
import { writeBatch } from '../../storage/writeBatch.js';
import { type Query, sql } from './db.js';
import { fetchInto } from './fetchNeeds.js';
import { defaultFetchSizes, Fetched, type FetchSizes, overlayTarget, Writes } from './overlay.js';
import { prefetchOf } from './prefetch.js';
import { lockSpace } from './schema.js';
import { writeAll } from './writeAll.js';

// A batch's commit, in parts: what it will likely read (prefetch.ts), fetching what it needs (fetchNeeds.ts,
// fetchOutbox.ts), and writing what it gathered (writeAll.ts, rowColumns.ts); re-exported here, as importers name them.
export { changesChannel, reloadAskedPayload } from './changesChannel.js';
export { batchColumns, fileColumns, requestColumns } from './rowColumns.js';
export { writeAll } from './writeAll.js';

/** How many times a batch may find it needs more than was fetched before it gives up (a bug, not a load). */
const maxRounds = 50;

/**
 * Decides and writes one batch inside the transaction `query(sql`: takes the log's writer lock, fetches what the batch reads,
 * decides it (again, with more fetched, as long as it needs more), and writes it. Returns the outcomes and the last
 * sequence number the batch took (`from` when it appended nothing).
 */
export const commitInTransaction = async (
  query: Query,
  batch: Batch,
  sizes: FetchSizes = defaultFetchSizes,
  options: { readonly webhookRetentionMs?: number | undefined } = {},
): Promise<{ outcomes: (CommandOutcome | Error)[]; from: number; to: number; rounds: number }> => {
  // One writer at a time, in every node, until this transaction ends (PostgreSQL releases the lock after the commit
  // is visible): every batch decides against everything committed before it, and takes the sequence numbers after the
  // last committed batch's. So numbers are given in commit order, with no gap a reader could pass (unlike a sequence
  // or bigserial, which hands out numbers before commit, so a later number may be visible before an earlier one).
  // The lock's statement goes first; what follows is queued behind it on the same connection and runs once it is held.
  const fetched = new Fetched(sizes);
  const locked = query(sql`SELECT pg_advisory_xact_lock(${lockSpace.log}::int, 1)`);
  const headRead = query<{ last_seq: number }[]>(sql`SELECT last_seq FROM log_head WHERE id = 1`);
  const [, [head]] = await Promise.all([
    locked,
    headRead,
    fetchInto(query, fetched, prefetchOf(batch.commands, sizes)),
  ]);
  if (head === undefined) throw new Error('the log_head row is missing: not an airs database');
  for (let round = 1; ; round++) {
    fetched.needs = [];
    const writes = new Writes();
    let result: ReturnType<typeof writeBatch> | undefined;
    let fault: unknown;
    try {
      result = writeBatch(overlayTarget(fetched, writes, options), batch.commands, head.last_seq);
    } catch (error) {
      fault = error;
    }
    if (fetched.needs.length > 0) {
      if (round >= maxRounds) throw new Error(`a batch still needed more reads after ${maxRounds} rounds`);
      await fetchInto(query, fetched, fetched.needs);
      continue;
    }
    if (result === undefined) throw fault;
    await writeAll(query, writes, batch, { lastSeq: head.last_seq });
    return { outcomes: result.outcomes, from: head.last_seq, to: result.lastSeq, rounds: round };
  }
};
