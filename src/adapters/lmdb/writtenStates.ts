import type { RequestState } from '../../domain/request/state.js';

/**
 * The request states this process wrote lately, so that the next command on a request (its start, then its
 * outcome) is decided without reading and decoding its record again. Bounded: settled requests leave at once, and
 * the rest is kept in two generations of at most `maxEntries / 2` each (when the young one is full it becomes the
 * old one and the previous old one is dropped), which costs O(1) per write. A single Map used as an LRU with
 * delete-then-set and "drop the first key" slowed every write as deleted slots piled up at its front.
 *
 * It is only trusted while this process is the log's only writer: each batch checks the log's last sequence number
 * against the one the previous batch left, and forgets everything if another process (the CLI) appended in
 * between, or if a batch was rolled back or its commit failed.
 */
export const createWrittenStates = (maxEntries: number) => {
  const generationSize = Math.max(1, Math.floor(maxEntries / 2));
  let young = new Map<string, RequestState>();
  let old = new Map<string, RequestState>();
  /** The log's last sequence number after our last batch; -1 when nothing can be trusted. */
  let expectedSeq = -1;

  const clear = () => {
    young = new Map();
    old = new Map();
  };

  return {
    /** At the start of a batch, inside its write transaction. */
    beginBatch(lastSeq: number): void {
      if (lastSeq !== expectedSeq) clear();
    },
    /** At the end of a batch that wrote everything, inside its write transaction. */
    wrote(lastSeq: number): void {
      expectedSeq = lastSeq;
    },
    /** When a batch was rolled back, or its commit failed: what it cached never happened. */
    failed(): void {
      clear();
      expectedSeq = -1;
    },
    get: (reqId: string): RequestState | undefined => young.get(reqId) ?? old.get(reqId),
    set(reqId: string, state: RequestState): void {
      if (state.status !== 'waiting' && state.status !== 'processing') {
        young.delete(reqId);
        old.delete(reqId);
        return;
      }
      if (young.size >= generationSize && !young.has(reqId)) {
        old = young;
        young = new Map();
      }
      young.set(reqId, state);
    },
  };
};
