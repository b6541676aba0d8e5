import { requestHistory } from '../../../app/requestHistory.js';
import { couldBeId } from '../../../domain/identifiers.js';
import { queuedRequestOf } from '../../../domain/queuePosition.js';
import type { RequestEvent } from '../../../domain/request/events.js';
import { isExpired } from '../../../domain/request/questions.js';
import type { RequestState } from '../../../domain/request/state.js';
import type { RequestPage } from '../../../ports/Store.js';
import { hourMs } from '../../../storage/timeBuckets.js';
import { type DashboardKit, seeOther, send } from './pageKit.js';
import { cursorOf, cursorText, parseCursor } from './requestCursor.js';
import { shownLine, shownText } from './shownText.js';
import {
  errorPage,
  type RequestStatusView,
  type RequestsShown,
  requestPage,
  requestsPage,
  requestsShown,
} from './views/pages.js';

/** The Requests pages of the dashboard: the account's requests a page at a time, and one request with its history. */

const pageSize = 25;
/** A request's page shows at most this much of its input and of its answer. */
const shownChars = 10_000;
/** A request's page reads at most this many events of the log, and lists at most this many of its own. */
const historyBounds = { maxEventsRead: 20_000, maxEntries: 200 } as const;

/** The upstream an event names (contract 19): an attempt's start on it, a move between two, an answer's first token. */
const eventUpstream = (e: RequestEvent) => {
  if (e.type === 'RequestProcessingStarted')
    return {
      ...(e.upstream === undefined ? {} : { upstream: e.upstream }),
      ...(e.servedBy === undefined ? {} : { servedBy: e.servedBy }),
    };
  if (e.type === 'RequestUpstreamChanged') return { upstream: e.to, fromUpstream: e.from };
  if (e.type === 'RequestCompleted' && e.firstTokenMs !== undefined) return { firstTokenMs: e.firstTokenMs };
  return {};
};

/** The answer's time to first token, from its history's RequestCompleted (absent: not seen, or not answered). */
const firstTokenOf = (entries: readonly { readonly event: RequestEvent }[]): number | undefined => {
  for (const { event } of entries) if (event.type === 'RequestCompleted') return event.firstTokenMs;
  return undefined;
};

/** As the API would answer: a request past its expiry time is expired, whether or not the sweeper wrote it yet. */
const statusInWords = (state: RequestState, now: number): RequestStatusView => {
  if (isExpired(state, now)) return 'expired';
  switch (state.status) {
    case 'waiting':
    case 'none':
      return 'queued';
    case 'processing':
    case 'completed':
    case 'failed':
    case 'cancelled':
    case 'expired':
      return state.status;
    default: {
      const unknown: never = state.status;
      return unknown;
    }
  }
};

/** The Requests page's filter (`?show=`): interactive requests when absent; a value not offered is no page. */
const shownOf = (value: string | null): RequestsShown | undefined =>
  value === null ? 'interactive' : requestsShown.find((shown) => shown === value);

export const mountRequestPages = ({ deps, routes, visitor, notFound }: DashboardKit) => {
  /** One page of the account's requests of the kind shown (the store's index by kind: only the rows shown are read): the
   * newest, or the page before or after a cursor (requestCursor.ts). */
  const requestRows = async (accountId: string, query: URLSearchParams, show: RequestsShown) => {
    const kind = show === 'all' ? undefined : show;
    const before = query.get('before');
    const after = query.get('after');
    if (before !== null && after !== null) return undefined;
    const cursor = parseCursor(before ?? after ?? '');
    if ((before !== null || after !== null) && cursor === undefined) return undefined;
    const reads = deps.store.reads;
    const exists = async (page: Omit<RequestPage, 'limit'>) =>
      (await reads.requestsOf(accountId, { ...page, kind, limit: 1 })).length > 0;
    if (after !== null && cursor !== undefined) {
      // The page just newer than the cursor; one more row says whether there is a newer page still.
      const rows = await reads.requestsOf(accountId, { after: cursor, kind, limit: pageSize + 1 });
      const shown = rows.slice(-pageSize);
      const last = shown.at(-1);
      return {
        shown,
        newerCursor: rows.length > pageSize && shown[0] !== undefined ? cursorOf(shown[0]) : undefined,
        olderCursor: last !== undefined && (await exists({ before: last.context })) ? cursorOf(last) : undefined,
      };
    }
    const rows = await reads.requestsOf(accountId, { before: cursor, kind, limit: pageSize + 1 });
    const shown = rows.slice(0, pageSize);
    const first = shown[0];
    // Past the last row (the rows expired meanwhile), "Newer" still leads back from the cursor.
    const newerFrom = first?.context ?? cursor;
    return {
      shown,
      olderCursor: rows.length > pageSize ? cursorOf(shown.at(-1) as RequestState) : undefined,
      newerCursor:
        cursor !== undefined && newerFrom !== undefined && (first === undefined || (await exists({ after: newerFrom })))
          ? cursorText(newerFrom)
          : undefined,
    };
  };
  routes.get('/dashboard/requests', async (event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    const { account, csrf } = who;
    // Links of earlier versions paged by number: they lead to the newest page.
    if (event.url.searchParams.has('page')) return seeOther(event, '/dashboard/requests');
    const show = shownOf(event.url.searchParams.get('show'));
    const page = show === undefined ? undefined : await requestRows(account.accountId, event.url.searchParams, show);
    if (show === undefined || page === undefined)
      return send(
        event,
        400,
        errorPage({
          status: 400,
          title: 'Not a page of requests',
          message:
            'This link does not name a page of your requests (it may have been cut short). Start again from the newest: Requests, in the menu above.',
          loggedIn: true,
          csrf,
          email: account.email,
        }),
      );
    const now = deps.clock.now();
    const currentHour = Math.floor(now / hourMs) * hourMs;
    return send(
      event,
      200,
      requestsPage({
        csrf,
        email: account.email,
        requests: page.shown.map((state) => ({
          id: state.context.reqId,
          model: state.context.model,
          status: statusInWords(state, now),
          createdAt: state.context.createdAt,
          completedAt: state.context.completedAt ?? state.context.failedAt,
          batchId: state.context.batchId,
        })),
        show,
        olderCursor: page.olderCursor,
        newerCursor: page.newerCursor,
        hourly: await deps.store.reads.requestCountsByHour(account.accountId, currentHour - 23 * hourMs, 24),
        now,
      }),
    );
  });

  // One of the account's own requests; another account's is answered as an unknown one (404).
  routes.get('/dashboard/requests/:id', async (event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    const reqId = event.context.params?.id ?? '';
    const found = couldBeId('request', reqId) ? await deps.store.reads.requestWithText(reqId) : undefined;
    if (found === undefined || found.state.status === 'none' || found.state.context.accountId !== who.account.accountId)
      return notFound(event, who);
    const { state, text } = found;
    const c = state.context;
    const now = deps.clock.now();
    const status = statusInWords(state, now);
    const history = await requestHistory(deps.store.reads, state, historyBounds);
    // Where it stands while it waits for a worker (contract 20), as the `/v1/ai` poll says it.
    const queuePosition =
      state.status === 'waiting'
        ? await deps.store.reads.queuePosition(
            queuedRequestOf(c),
            now,
            deps.config.processing.promoteAfterSeconds * 1000,
          )
        : undefined;
    // The record holds the input while the request is queued, the answer once it is completed (decisions.md).
    const queued = state.status === 'waiting' || state.status === 'processing';
    const shown = text === undefined ? undefined : shownText(text, shownChars);
    // A batch's line keeps where it lies in its input file, not a copy: its start is read from there.
    const line =
      queued && c.input === 'line' && text !== undefined
        ? await shownLine(deps.store.files, text, shownChars)
        : undefined;
    return send(
      event,
      200,
      requestPage({
        csrf: who.csrf,
        email: who.account.email,
        id: c.reqId,
        model: c.model,
        status,
        queuePosition,
        input: c.input ?? 'prompt',
        promptChars: c.promptChars,
        prompt: c.input === 'line' ? line : queued ? shown : undefined,
        answer: state.status === 'completed' ? shown : undefined,
        responseChars: c.responseChars,
        attempts: c.attempts,
        maxAttempts: c.maxAttempts,
        failureSaid: c.failureSaid,
        inputTokens: c.inputTokens,
        outputTokens: c.outputTokens,
        finishReason: c.finishReason,
        createdAt: c.createdAt,
        startedAt: c.startedAt,
        completedAt: c.completedAt,
        failedAt: c.failedAt,
        cancelledAt: c.cancelledAt,
        expiresAt: c.expiresAt,
        expiredAt: c.expiredAt,
        batchId: c.batchId,
        customId: c.customId,
        upstream: c.upstream,
        servedBy: c.servedBy,
        firstTokenMs: firstTokenOf(history.entries),
        events: history.entries.map(({ event: e, state: after }) => ({
          seq: e.seq,
          at: e.at,
          type: e.type,
          attempt: 'attempt' in e ? e.attempt : undefined,
          retryAt: e.type === 'RequestAttemptFailed' ? e.retryAt : undefined,
          state: after,
          ...eventUpstream(e),
        })),
        eventsCutShort: history.cutShort,
      }),
    );
  });
};
