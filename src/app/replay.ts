import type { StoredEvent } from '../domain/events.js';
import { isRequestEvent } from '../domain/request/events.js';
import { evolve, initialRequestState, type RequestState, type RequestStatus } from '../domain/request/state.js';
import type { ReadModel } from '../ports/Store.js';

export type ReplayFilter = {
  readonly request?: string;
  readonly account?: string;
  /** Epoch ms: events before it are folded but not shown. */
  readonly since?: number;
};

/** One line of a timeline: the event and the state its request (if any) reached by it. */
export type TimelineEntry = { readonly event: StoredEvent; readonly state?: RequestStatus };

export type Replay = {
  readonly entries: TimelineEntry[];
  /** The state each request shown reached at the end of the log. */
  readonly finalStates: Record<string, RequestStatus>;
  readonly eventsRead: number;
};

const accountOf = (event: StoredEvent, owners: Map<string, string>): string | undefined => {
  if ('accountId' in event) return event.accountId;
  if ('reqId' in event) return owners.get(event.reqId);
  return undefined;
};

/**
 * Folds the log through the same `evolve` the server uses and reports what each event did. Only requests that
 * pass the filter are kept in memory, so filtered replays of a large log stay small.
 */
export const replay = async (reads: ReadModel, filter: ReplayFilter): Promise<Replay> => {
  const owners = new Map<string, string>();
  const states = new Map<string, RequestState>();
  const entries: TimelineEntry[] = [];
  const shown = new Set<string>();
  let eventsRead = 0;
  for await (const event of reads.events()) {
    eventsRead++;
    if (event.type === 'RequestQueued' && filter.account !== undefined && event.accountId === filter.account) {
      owners.set(event.reqId, event.accountId);
    }
    if (filter.request !== undefined && (!('reqId' in event) || event.reqId !== filter.request)) continue;
    if (filter.account !== undefined && accountOf(event, owners) !== filter.account) continue;
    let state: RequestStatus | undefined;
    if (isRequestEvent(event)) {
      const next = evolve(states.get(event.reqId) ?? initialRequestState, event);
      states.set(event.reqId, next);
      state = next.status;
    }
    if (filter.since === undefined || event.at >= filter.since) {
      entries.push({ event, state });
      if (isRequestEvent(event)) shown.add(event.reqId);
    }
  }
  // Requests whose every event came before `since` are folded (their later states need them) but not shown.
  const finalStates = Object.fromEntries(
    [...states].filter(([reqId]) => shown.has(reqId)).map(([reqId, state]) => [reqId, state.status]),
  );
  return { entries, finalStates, eventsRead };
};

/** `--since` accepts an ISO 8601 time or epoch milliseconds. */
export const parseSince = (text: string): number | undefined => {
  if (/^\d+$/.test(text)) return Number(text);
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : time;
};
