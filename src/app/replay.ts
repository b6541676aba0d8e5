import { isBatchEvent } from '../domain/batch/events.js';
import { type BatchState, type BatchStatus, evolveBatch, initialBatchState } from '../domain/batch/state.js';
import type { StoredEvent } from '../domain/events.js';
import { isRequestEvent } from '../domain/request/events.js';
import { evolve, initialRequestState, type RequestState, type RequestStatus } from '../domain/request/state.js';
import type { ReadModel } from '../ports/Store.js';

export type ReplayFilter = {
  readonly request?: string;
  readonly account?: string;
  /** A batch: its own events and its lines' (the requests queued with this `batchId`). */
  readonly batch?: string;
  /** Epoch ms: events before it are folded but not shown. */
  readonly since?: number;
};

/** Which upstream (of which model: a fallback's) ran the attempt an answer or a failure ends, and, for an answer, its
 * time to first token. */
export type Served = { readonly model: string; readonly upstream: string; readonly firstTokenMs?: number | undefined };

/** One line of a timeline: the event and the state its request or batch (if any) reached by it. */
export type TimelineEntry = {
  readonly event: StoredEvent;
  readonly state?: RequestStatus | BatchStatus;
  /** On an attempt's end (answered or failed), the upstream it ran on, as the fold knows it. */
  readonly served?: Served | undefined;
};

/** The upstream the attempt that `event` ends ran on (the fold's context after it), if the model has upstreams. */
export const servedOf = (event: StoredEvent, after: RequestState): Served | undefined => {
  if (event.type !== 'RequestCompleted' && event.type !== 'RequestAttemptFailed') return undefined;
  const { upstream, servedBy, model } = after.context;
  if (upstream === undefined) return undefined;
  const firstTokenMs = event.type === 'RequestCompleted' ? event.firstTokenMs : undefined;
  return { model: servedBy ?? model, upstream, ...(firstTokenMs === undefined ? {} : { firstTokenMs }) };
};

export type Replay = {
  readonly entries: TimelineEntry[];
  /** The state each request and batch shown reached at the end of the log. */
  readonly finalStates: Record<string, RequestStatus | BatchStatus>;
  readonly eventsRead: number;
};

/** The account of an event: its own field, else that of the request, batch or file it names (`owners`). */
const accountOf = (event: StoredEvent, owners: Map<string, string>): string | undefined => {
  if ('accountId' in event) return event.accountId;
  if ('reqId' in event) return owners.get(event.reqId);
  if ('batchId' in event) return owners.get(event.batchId);
  if ('fileId' in event) return owners.get(event.fileId);
  return undefined;
};

/** Whether an event is a batch's own, or one of its lines'. */
const ofBatch = (event: StoredEvent, batchId: string, lines: Set<string>): boolean =>
  isBatchEvent(event) ? event.batchId === batchId : isRequestEvent(event) && lines.has(event.reqId);

/**
 * Folds the log through the same `evolve` the server uses (`evolveBatch` for batches) and reports what each event
 * did. Only requests and batches that pass the filter are kept in memory (and, for `account` and `batch`, the ids
 * that belong to them), so filtered replays of a large log stay small.
 */
export const replay = async (reads: ReadModel, filter: ReplayFilter): Promise<Replay> => {
  const owners = new Map<string, string>();
  const lines = new Set<string>();
  const states = new Map<string, RequestState>();
  const batches = new Map<string, BatchState>();
  const entries: TimelineEntry[] = [];
  const shown = new Set<string>();
  let eventsRead = 0;
  for await (const event of reads.events()) {
    eventsRead++;
    if (filter.account !== undefined && 'accountId' in event && event.accountId === filter.account) {
      // What the account makes names it; later events of the same request, batch or file name only the id.
      if (event.type === 'RequestQueued') owners.set(event.reqId, event.accountId);
      else if (event.type === 'BatchCreated') owners.set(event.batchId, event.accountId);
      else if (event.type === 'FileCreated') owners.set(event.fileId, event.accountId);
    }
    if (filter.batch !== undefined && event.type === 'RequestQueued' && event.batchId === filter.batch)
      lines.add(event.reqId);
    if (filter.request !== undefined && (!('reqId' in event) || event.reqId !== filter.request)) continue;
    if (filter.account !== undefined && accountOf(event, owners) !== filter.account) continue;
    if (filter.batch !== undefined && !ofBatch(event, filter.batch, lines)) continue;
    let state: RequestStatus | BatchStatus | undefined;
    let id: string | undefined;
    let served: Served | undefined;
    if (isRequestEvent(event)) {
      const next = evolve(states.get(event.reqId) ?? initialRequestState, event);
      states.set(event.reqId, next);
      state = next.status;
      id = event.reqId;
      served = servedOf(event, next);
    } else if (isBatchEvent(event)) {
      const next = evolveBatch(batches.get(event.batchId) ?? initialBatchState, event);
      batches.set(event.batchId, next);
      state = next.status;
      id = event.batchId;
    }
    if (filter.since === undefined || event.at >= filter.since) {
      entries.push(served === undefined ? { event, state } : { event, state, served });
      if (id !== undefined) shown.add(id);
    }
  }
  // Requests and batches whose every event came before `since` are folded (their later states need them) but not
  // shown.
  const finalStates: Record<string, RequestStatus | BatchStatus> = {};
  for (const [batchId, state] of batches) if (shown.has(batchId)) finalStates[batchId] = state.status;
  for (const [reqId, state] of states) if (shown.has(reqId)) finalStates[reqId] = state.status;
  return { entries, finalStates, eventsRead };
};

/** `--since` accepts an ISO 8601 time or epoch milliseconds. */
export const parseSince = (text: string): number | undefined => {
  if (/^\d+$/.test(text)) return Number(text);
  const time = Date.parse(text);
  return Number.isNaN(time) ? undefined : time;
};
