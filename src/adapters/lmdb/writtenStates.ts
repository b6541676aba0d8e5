import type { RequestState } from '../../domain/request/state.js';
import { createTwoGenerationCache } from '../../domain/twoGenerationCache.js';

/**
 * The request states this process wrote lately, so that the next command on a request (its start, then its
 * outcome) is decided without reading and decoding its record again. Bounded: settled requests leave at once, and
 * the rest is kept in a two-generation cache (O(1) per write).
 *
 * It is only trusted while this process is the log's only writer: each batch checks the log's last sequence number
 * against the one the previous batch left, and forgets everything if another process (the CLI) appended in
 * between, or if a batch was rolled back or its commit failed.
 */
export const createWrittenStates = (maxEntries: number) => {
  const states = createTwoGenerationCache<RequestState>(maxEntries);
  /** The log's last sequence number after our last batch; -1 when nothing can be trusted. */
  let expectedSeq = -1;

  return {
    /** At the start of a batch, inside its write transaction. */
    beginBatch(lastSeq: number): void {
      if (lastSeq !== expectedSeq) states.clear();
    },
    /** At the end of a batch that wrote everything, inside its write transaction. */
    wrote(lastSeq: number): void {
      expectedSeq = lastSeq;
    },
    /** When a batch was rolled back, or its commit failed: what it cached never happened. */
    failed(): void {
      states.clear();
      expectedSeq = -1;
    },
    get: states.get,
    set(reqId: string, state: RequestState): void {
      if (state.status !== 'waiting' && state.status !== 'processing') states.delete(reqId);
      else states.set(reqId, state);
    },
  };
};
