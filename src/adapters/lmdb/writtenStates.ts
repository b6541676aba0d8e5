import type { RequestState } from '../../domain/request/state.js';

/**
 * The request states this process wrote lately, so that the next command on a request (its start, then its
 * outcome) is decided without reading and decoding the view again. Bounded: settled requests leave at once, the
 * oldest others when it is full. It is only trusted while this process is the log's only writer: each batch checks
 * the log's last sequence number against the one the previous batch left, and forgets everything if another
 * process (the CLI) appended in between, or if a batch failed.
 */
export const createWrittenStates = (maxEntries: number) => {
  const states = new Map<string, RequestState>();
  /** The log's last sequence number after our last committed batch; -1 when nothing can be trusted. */
  let expectedSeq = -1;

  return {
    /** At the start of a batch, inside its write transaction. */
    beginBatch(lastSeq: number): void {
      if (lastSeq !== expectedSeq) states.clear();
    },
    /** Once the batch is durable. */
    committed(lastSeq: number): void {
      expectedSeq = lastSeq;
    },
    /** When a batch was rolled back: what it cached never happened. */
    failed(): void {
      states.clear();
      expectedSeq = -1;
    },
    get: (reqId: string): RequestState | undefined => states.get(reqId),
    set(reqId: string, state: RequestState): void {
      if (state.status === 'waiting' || state.status === 'processing') {
        states.delete(reqId);
        states.set(reqId, state);
        if (states.size > maxEntries) states.delete(states.keys().next().value as string);
      } else {
        states.delete(reqId);
      }
    },
  };
};
