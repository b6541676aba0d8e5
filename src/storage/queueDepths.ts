import type { ModelQueue, QueueDepths } from '../ports/Store.js';
import type { SyncReads } from './syncReads.js';

/**
 * The waiting requests by model, read from the dispatch index at most `limit` entries deep: how many there are, and
 * the oldest time one of them became available (a request waiting out a retry's backoff is queued but not yet
 * available: it is not waiting for a worker).
 */
export const queueDepthsOf = (reads: SyncReads, now: number, limit: number): QueueDepths => {
  const found = new Map<string, { depth: number; oldestAvailableAt: number }>();
  let scanned = 0;
  for (const account of reads.queuedAccounts(undefined)) {
    for (const entry of reads.queuedOf(account)) {
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
  }
  return { models: modelsOf(found), truncated: false };
};

const modelsOf = (found: Map<string, { depth: number; oldestAvailableAt: number }>): ModelQueue[] =>
  [...found].map(([model, { depth, oldestAvailableAt }]) => ({ model, depth, oldestAvailableAt }));
