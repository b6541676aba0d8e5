import type { ModelQueue, QueueDepths } from '../ports/Store.js';
import type { SyncReads } from './syncReads.js';

/**
 * The waiting requests by model, read from the dispatch index at most `limit` entries deep: how many there are, and
 * the oldest time one of them became available (a request waiting out a retry's backoff is queued but not yet
 * available: it is not waiting for a worker).
 */
export const queueDepthsOf = (reads: SyncReads, now: number, limit: number): QueueDepths =>
  tallyQueue(
    (function* () {
      for (const account of reads.queuedAccounts(undefined)) yield* reads.queuedOf(account);
    })(),
    now,
    limit,
  );

/**
 * The waiting requests by model, from the dispatch index's entries in its order (lane by lane, by availability):
 * `limit` of them at most, `truncated` when there are more. PostgreSQL reads the entries in SQL (one more than
 * `limit`) and tallies them here too.
 */
export const tallyQueue = (
  entries: Iterable<{ readonly model: string; readonly availableAt: number }>,
  now: number,
  limit: number,
): QueueDepths => {
  const found = new Map<string, { depth: number; oldestAvailableAt: number }>();
  let scanned = 0;
  for (const entry of entries) {
    if (scanned++ >= limit) return { models: modelsOf(found), truncated: true };
    let model = found.get(entry.model);
    if (model === undefined) {
      model = { depth: 0, oldestAvailableAt: Number.POSITIVE_INFINITY };
      found.set(entry.model, model);
    }
    model.depth++;
    if (entry.availableAt <= now && entry.availableAt < model.oldestAvailableAt)
      model.oldestAvailableAt = entry.availableAt;
  }
  return { models: modelsOf(found), truncated: false };
};

const modelsOf = (found: Map<string, { depth: number; oldestAvailableAt: number }>): ModelQueue[] =>
  [...found].map(([model, { depth, oldestAvailableAt }]) => ({ model, depth, oldestAvailableAt }));
