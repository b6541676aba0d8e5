import type { StoredEvent } from '../domain/events.js';
import { isRequestEvent, type RequestEvent } from '../domain/request/events.js';
import { evolve, initialRequestState, type RequestState, type RequestStatus } from '../domain/request/state.js';
import type { ReadModel } from '../ports/Store.js';

/** One event of a request's history, and the state the request reached by it (as `airs replay` shows it). */
export type HistoryEntry = { readonly event: RequestEvent & { readonly seq: number }; readonly state: RequestStatus };

export type RequestHistory = {
  readonly entries: readonly HistoryEntry[];
  /** The read stopped at its bound before the request's history was whole (`airs replay --request` reads it all). */
  readonly cutShort: boolean;
  readonly eventsRead: number;
};

export type HistoryBounds = {
  /** At most this many events of the log are read, whatever they belong to. */
  readonly maxEventsRead: number;
  /** At most this many of the request's own events are kept (lease extensions of a long attempt add up). */
  readonly maxEntries: number;
};

/**
 * Writers' clocks may differ a little (several processes, several nodes): the log is searched from this long before
 * the request was made, so that its first event is not passed over.
 */
const clockSlackMs = 60_000;

const isFinal = (status: RequestStatus) => status === 'expired';

/** The first event at or after `seq`, if any (the iterator is closed at once, whatever the store). */
const firstFrom = async (reads: ReadModel, seq: number): Promise<StoredEvent | undefined> => {
  for await (const event of reads.events(seq)) return event;
  return undefined;
};

/**
 * The smallest sequence number whose event is at or after `at`, by binary search over the log (its times grow with
 * its sequence numbers, but for the writers' clocks' differences): about log2(length) reads of one event.
 */
const seqAtOrAfter = async (reads: ReadModel, at: number): Promise<number> => {
  let low = 1;
  let high = (await reads.lastSeq()) + 1;
  while (low < high) {
    const middle = Math.floor((low + high) / 2);
    const event = await firstFrom(reads, middle);
    if (event === undefined || event.at >= at) high = middle;
    else low = Math.max(middle, event.seq) + 1;
  }
  return low;
};

/**
 * One request's events from the log, folded through the same `evolve` the server uses, for a page that shows its
 * history. Bounded, as a page's work must be: the log is entered near the request's creation (binary search by time)
 * and read forward until the request reaches `current` (the state the store holds for it: its history is then
 * whole), the end of the log, or `bounds.maxEventsRead` events.
 */
export const requestHistory = async (
  reads: ReadModel,
  current: RequestState,
  bounds: HistoryBounds,
): Promise<RequestHistory> => {
  const { reqId, createdAt } = current.context;
  const from = await seqAtOrAfter(reads, createdAt - clockSlackMs);
  const entries: HistoryEntry[] = [];
  let state = initialRequestState;
  let eventsRead = 0;
  let seen = 0;
  for await (const event of reads.events(from)) {
    if (eventsRead >= bounds.maxEventsRead) return { entries, cutShort: true, eventsRead };
    eventsRead++;
    if (!isRequestEvent(event) || event.reqId !== reqId) continue;
    state = evolve(state, event);
    seen++;
    if (entries.length < bounds.maxEntries) entries.push({ event, state: state.status });
    // Whole once the fold has come as far as the store's view (the last change it saw), or to the very end.
    if (isFinal(state.status) || reachedView(state, current)) break;
  }
  return { entries, cutShort: seen > entries.length, eventsRead };
};

/** Whether the fold has reached the view the store holds: the same status, and the same last change of it. */
const reachedView = (folded: RequestState, view: RequestState): boolean => {
  if (folded.status !== view.status) return false;
  const a = folded.context;
  const b = view.context;
  return (
    a.attempts === b.attempts &&
    a.startedAt === b.startedAt &&
    a.leaseUntil === b.leaseUntil &&
    a.availableAt === b.availableAt &&
    a.completedAt === b.completedAt &&
    a.failedAt === b.failedAt &&
    a.cancelledAt === b.cancelledAt &&
    a.expiredAt === b.expiredAt &&
    // A failover moves a running attempt without changing the times above.
    a.upstream === b.upstream
  );
};
