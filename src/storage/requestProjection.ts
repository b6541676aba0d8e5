/** What a request's change does to the views: its view, its index entries and groups, and its account's counts. */
import { dispatchLaneOf } from '../domain/dispatchLane.js';
import { counterMoves } from '../domain/processingCounters.js';
import { queuedDelta } from '../domain/queuedCounter.js';
import type { RequestState } from '../domain/request/state.js';
import type { RequestKind } from '../ports/Store.js';
import { projectHourlyUsage } from './hourlyUsage.js';
import { moveIndex } from './indexMoves.js';
import { dayMs } from './timeBuckets.js';
import type { DailyUsage, GroupName, IndexKey, ViewAccess } from './viewAccess.js';

/** The start (UTC midnight, ms) of the day `at` falls in: the bucket of `usageByDay` (timeBuckets.ts). */
export const dayStartOf = (at: number): number => Math.floor(at / dayMs) * dayMs;

/** The usage a request adds to its account's day when it completes, if its model told it. */
export const usageOf = (state: RequestState): { readonly day: number; readonly usage: DailyUsage } | undefined => {
  const { completedAt, inputTokens, outputTokens } = state.context;
  if (completedAt === undefined || inputTokens === undefined || outputTokens === undefined) return undefined;
  return { day: dayStartOf(completedAt), usage: { inputTokens, outputTokens } };
};

/**
 * A request waiting for a worker is in the dispatch index: grouped by lane (its account's, or its account's batch
 * lane for a batch's line: domain/batch/lines.ts), so workers can take lanes in turn, then by the time it becomes
 * available. The value is its model.
 */
export const dispatchKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'waiting'
    ? [dispatchLaneOf(state.context), state.context.availableAt, state.context.reqId]
    : undefined;

/**
 * Every request of an account that has not expired, by the time it was made: what the dashboard lists (newest first,
 * paged) and counts per hour (by range counts, without reading the requests). Present from `RequestQueued` until
 * `RequestExpired`; the value is empty.
 */
export const accountRequestKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'none' || state.status === 'expired'
    ? undefined
    : [state.context.accountId, state.context.createdAt, state.context.reqId];

/** The same entry by kind, [accountId, kind, createdAt, reqId]: an account's interactive requests or its batches'
 * lines, page by page, without reading the other kind (the dashboard's Requests filter). */
export const accountRequestKindKeyOf = (state: RequestState): IndexKey | undefined =>
  state.status === 'none' || state.status === 'expired'
    ? undefined
    : [state.context.accountId, requestKindOf(state), state.context.createdAt, state.context.reqId];

/** A batch's line knows its batch; any other request was made on its own. */
export const requestKindOf = (state: RequestState): RequestKind =>
  state.context.batchId === undefined ? 'interactive' : 'batch';

/**
 * A request made with an `Idempotency-Key` is found by it: [accountId, key] → its id, from `RequestQueued` until it
 * expires. A key whose request has expired (or is older than the window) may make a new request, which then takes
 * the entry over; the expiry of the older one removes the entry only while it still names that one.
 */
export const idempotencyKeyOf = (state: RequestState): IndexKey | undefined =>
  state.context.idempotencyKey === undefined ? undefined : [state.context.accountId, state.context.idempotencyKey];

const isLive = (state: RequestState) => state.status !== 'none' && state.status !== 'expired';

const moveIdempotencyEntry = (views: ViewAccess, before: RequestState, after: RequestState) => {
  const key = idempotencyKeyOf(after);
  if (key === undefined) return;
  const reqId = after.context.reqId;
  if (!isLive(before) && isLive(after)) views.putIndex('idempotency', key, reqId);
  else if (isLive(before) && !isLive(after) && views.getIndex('idempotency', key) === reqId)
    views.removeIndex('idempotency', key);
};

/**
 * When the sweeper acts on a request next (`undefined`: never again): a queued or running one with a deadline before
 * its expiry is cancelled at the deadline; every other one is expired at its expiry. One index for both keeps the
 * sweeper's read one bounded read; a request without a deadline is where it always was (no store is rewritten).
 */
const expiryGroupOf = (state: RequestState): number | undefined => {
  const { status, context } = state;
  if (status === 'none' || status === 'expired') return undefined;
  const live = status === 'waiting' || status === 'processing';
  return live && context.deadlineAt !== undefined && context.deadlineAt < context.expiresAt
    ? context.deadlineAt
    : context.expiresAt;
};

/** The group of each grouped index a request in `state` belongs to, if any. */
export const groupOf: { readonly [G in GroupName]: (state: RequestState) => number | undefined } = {
  expiry: (state) => expiryGroupOf(state),
  // By the end of its attempt's lease (older requests, without one: by its start), so lapsed leases come first.
  processing: (state) =>
    state.status === 'processing' ? (state.context.leaseUntil ?? state.context.startedAt) : undefined,
};

const moveGroup = (views: ViewAccess, group: GroupName, before: RequestState, after: RequestState) => {
  const from = groupOf[group](before);
  const to = groupOf[group](after);
  if (from !== to) views.moveInGroup(group, after.context.reqId, from, to);
};

/**
 * What a request's move from `before` to `after` does to the views: its view (with its text: retention follows
 * from the new status, see codec.ts) and its index entries. Every index entry is a function of the request's state,
 * so one move over many events (a batch) leaves exactly what event-by-event moves would: the store calls this once
 * per request and batch.
 */
export const projectRequestChange = (
  views: ViewAccess,
  before: RequestState,
  after: RequestState,
  text?: string,
): void => {
  views.putRequest(after.context.reqId, after, text);
  moveIndex(views, 'dispatch', dispatchKeyOf(before), dispatchKeyOf(after), after.context.model);
  moveIndex(views, 'accountRequests', accountRequestKeyOf(before), accountRequestKeyOf(after));
  moveIndex(views, 'accountRequestsByKind', accountRequestKindKeyOf(before), accountRequestKindKeyOf(after));
  moveIdempotencyEntry(views, before, after);
  moveGroup(views, 'expiry', before, after);
  moveGroup(views, 'processing', before, after);
  const queued = queuedDelta(before, after);
  if (queued !== 0) views.addQueued(after.context.accountId, queued);
  if (before.status === 'processing' || after.status === 'processing')
    for (const [counter, delta] of counterMoves(before, after)) views.addProcessing(counter, delta);
  // Completed within this change (it may have expired in the same batch too).
  if (before.context.completedAt === undefined && after.context.completedAt !== undefined) {
    const used = usageOf(after);
    if (used !== undefined) {
      views.addUsage(after.context.accountId, used.day, used.usage);
      const { inputTokens, outputTokens } = used.usage;
      views.addTokens(after.context.accountId, after.context.completedAt, inputTokens + outputTokens);
    }
  }
  projectHourlyUsage(views, before, after);
};
