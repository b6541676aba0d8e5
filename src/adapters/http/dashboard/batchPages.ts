import type { H3Event } from 'h3';
import type { BatchesShape } from '../../../app/batches/Batches.js';
import type { AccountState } from '../../../domain/account/state.js';
import { type BatchView, isFinalBatch, mayCancelBatch } from '../../../domain/batch/state.js';
import { NotFound } from '../../../domain/errors.js';
import { couldBeId } from '../../../domain/identifiers.js';
import type { StoreShape } from '../../../ports/Store.js';
import { batchObjectOf } from '../openai/batches/wire.js';
import { cursorText, parseCursor } from './requestCursor.js';
import { type BatchDetail, type BatchRow, batchesPage, batchPage, errorPage } from './views/pages.js';

/** The logged-in account as these pages need it. */
export type BatchVisitor = { readonly account: AccountState; readonly csrf: string };

/** What the dashboard's routes lend these pages: how they answer, and who is asking. */
export type BatchPageKit<V extends BatchVisitor> = {
  readonly get: (path: string, handler: (event: H3Event) => unknown) => void;
  readonly post: (path: string, handler: (event: H3Event) => unknown) => void;
  readonly visitor: (event: H3Event) => Promise<V | undefined>;
  /** A state-changing form of a logged-in visitor, its CSRF token checked first. */
  readonly action: (change: (event: H3Event, who: V) => Promise<unknown>) => (event: H3Event) => Promise<unknown>;
  readonly send: (event: H3Event, status: number, markup: string) => unknown;
  readonly seeOther: (event: H3Event, location: string) => unknown;
  readonly notFound: (event: H3Event, who: V | undefined) => unknown;
  readonly store: StoreShape;
  readonly batches: BatchesShape;
  readonly now: () => number;
  readonly log: { info: (fields: Record<string, unknown>, message: string) => void };
};

const pageSize = 25;

/** A batch as the Batches page shows it: what the API shows of it (status, counts, usage, files, metadata). */
const batchRowOf = (view: BatchView, now: number): BatchRow => {
  const shown = batchObjectOf(view);
  const { context } = view.state;
  return {
    id: shown.id,
    status: shown.status,
    endpoint: shown.endpoint,
    model: shown.model ?? undefined,
    createdAt: context.createdAt,
    total: shown.request_counts.total,
    completed: shown.request_counts.completed,
    failed: shown.request_counts.failed,
    outputFileId: shown.output_file_id ?? undefined,
    errorFileId: shown.error_file_id ?? undefined,
    inputTokens: shown.usage.input_tokens,
    outputTokens: shown.usage.output_tokens,
    metadata: shown.metadata ?? {},
    ended: isFinalBatch(view.state.status),
    // A failed batch's end is its failure's time; the others' is when they completed, expired or were cancelled.
    endedAt: isFinalBatch(view.state.status) ? (context.endedAt ?? context.failedAt) : undefined,
    cancellable: mayCancelBatch(view.state, now),
  };
};

/** A batch as its own page shows it: its row, its input file, the times of its steps and its errors. */
const batchDetailOf = (view: BatchView, now: number): BatchDetail => {
  const { context } = view.state;
  const shown = batchObjectOf(view);
  return {
    ...batchRowOf(view, now),
    inputFileId: context.inputFileId,
    inProgressAt: context.inProgressAt,
    finalizingAt: context.finalizingAt,
    cancellingAt: context.cancellingAt,
    expiresAt: context.expiresAt,
    errors: (shown.errors?.data ?? []).map((error: { message?: unknown }) => String(error.message ?? '')),
  };
};

/** Where a page of batches starts: a batch's creation time and id (as requestCursor.ts names a request's). */
const batchCursorOf = (view: BatchView) => ({
  createdAt: view.state.context.createdAt,
  id: view.state.context.batchId,
});
const batchCursorText = (view: BatchView) =>
  cursorText({ createdAt: view.state.context.createdAt, reqId: view.state.context.batchId });

/**
 * The Batches pages: the account's batches page by page (newest first), a batch's own page, and Cancel, which goes
 * through the same service as `POST /v1/batches/{id}/cancel`. Pages of batches not ended reload themselves.
 */
export const mountBatchPages = <V extends BatchVisitor>(kit: BatchPageKit<V>) => {
  /** One page of the account's batches, paged as its requests are: the newest, or before or after a cursor. */
  const batchRows = async (accountId: string, query: URLSearchParams) => {
    const before = query.get('before');
    const after = query.get('after');
    if (before !== null && after !== null) return undefined;
    const parsed = parseCursor(before ?? after ?? '');
    if ((before !== null || after !== null) && parsed === undefined) return undefined;
    const cursor = parsed === undefined ? undefined : { createdAt: parsed.createdAt, id: parsed.reqId };
    const reads = kit.store.reads;
    const ids = (order: 'asc' | 'desc', from: typeof cursor, limit: number) =>
      reads.listOf('accountBatches', accountId, { from, order, limit });
    const viewsOf = async (list: readonly string[]) =>
      (await Promise.all(list.map((id) => reads.batch(id)))).filter((view) => view !== undefined);
    if (after !== null && cursor !== undefined) {
      // The page just newer than the cursor, oldest first from the store; one more id says whether a newer page is left.
      const newer = await ids('asc', cursor, pageSize + 1);
      const shown = await viewsOf(newer.slice(0, pageSize).reverse());
      const last = shown.at(-1);
      return {
        shown,
        newerCursor: newer.length > pageSize && shown[0] !== undefined ? batchCursorText(shown[0]) : undefined,
        olderCursor:
          last !== undefined && (await ids('desc', batchCursorOf(last), 1)).length > 0
            ? batchCursorText(last)
            : undefined,
      };
    }
    const older = await ids('desc', cursor, pageSize + 1);
    const shown = await viewsOf(older.slice(0, pageSize));
    const first = shown[0];
    // Past the last row, "Newer" still leads back from the cursor.
    const newerFrom = first === undefined ? cursor : batchCursorOf(first);
    return {
      shown,
      olderCursor: older.length > pageSize && shown.length > 0 ? batchCursorText(shown.at(-1) as BatchView) : undefined,
      newerCursor:
        cursor !== undefined &&
        newerFrom !== undefined &&
        (first === undefined || (await ids('asc', newerFrom, 1)).length > 0)
          ? cursorText({ createdAt: newerFrom.createdAt, reqId: newerFrom.id })
          : undefined,
    };
  };

  kit.get('/dashboard/batches', async (event) => {
    const who = await kit.visitor(event);
    if (who === undefined) return kit.seeOther(event, '/dashboard/login');
    const { account, csrf } = who;
    const page = await batchRows(account.accountId, event.url.searchParams);
    if (page === undefined)
      return kit.send(
        event,
        400,
        errorPage({
          status: 400,
          title: 'Not a page of batches',
          message:
            'This link does not name a page of your batches (it may have been cut short). Start again from the newest: Batches, in the menu above.',
          loggedIn: true,
          csrf,
          email: account.email,
        }),
      );
    const now = kit.now();
    return kit.send(
      event,
      200,
      batchesPage({
        csrf,
        email: account.email,
        batches: page.shown.map((view) => batchRowOf(view, now)),
        olderCursor: page.olderCursor,
        newerCursor: page.newerCursor,
      }),
    );
  });

  /** The visitor's own batch named by the path; another account's or an unknown one: none. */
  const ownBatch = async (event: H3Event, who: BatchVisitor) => {
    const batchId = event.context.params?.id ?? '';
    const view = couldBeId('batch', batchId) ? await kit.store.reads.batch(batchId) : undefined;
    return view?.state.context.accountId === who.account.accountId ? view : undefined;
  };

  kit.get('/dashboard/batches/:id', async (event) => {
    const who = await kit.visitor(event);
    if (who === undefined) return kit.seeOther(event, '/dashboard/login');
    const view = await ownBatch(event, who);
    if (view === undefined) return kit.notFound(event, who);
    return kit.send(
      event,
      200,
      batchPage({
        csrf: who.csrf,
        email: who.account.email,
        batch: batchDetailOf(view, kit.now()),
        cancelAsked: event.url.searchParams.get('cancelled') === '1',
      }),
    );
  });

  kit.post(
    '/dashboard/batches/:id/cancel',
    kit.action(async (event, who) => {
      const view = await ownBatch(event, who);
      if (view === undefined) return kit.notFound(event, who);
      const { accountId, plan, email } = who.account;
      // The API's own service (it reads only the account of the principal: the session's stands for a key). A batch
      // past cancelling (ended, finalizing) is answered as it is, nothing asked.
      const batchId = view.state.context.batchId;
      const cancelled = await kit.batches.cancel({ accountId, keyId: 'dashboard', plan }, batchId);
      if (cancelled instanceof NotFound) return kit.notFound(event, who);
      if (!('state' in cancelled)) {
        event.res.headers.set('Retry-After', String(cancelled.retryAfterSeconds));
        return kit.send(
          event,
          503,
          errorPage({
            status: 503,
            title: 'Temporarily unavailable',
            message: 'The batch could not be cancelled right now. Try again in a few seconds.',
            loggedIn: true,
            csrf: who.csrf,
            email,
          }),
        );
      }
      kit.log.info({ accountId, batchId }, 'dashboard batch cancel asked');
      // A redirect, so that a reload asks nothing again; the page it leads to says the cancel was asked.
      return kit.seeOther(event, `/dashboard/batches/${encodeURIComponent(batchId)}?cancelled=1`);
    }),
  );
};
