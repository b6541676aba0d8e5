import * as Effect from 'effect/Effect';
import * as Result from 'effect/Result';
import { type H3, type H3Event, html, raw, redirect } from 'h3';
import type { Logger } from 'pino';
import type { AccountsShape } from '../../../app/Accounts.js';
import type { BatchesShape } from '../../../app/batches/Batches.js';
import { isHashingBusy } from '../../../app/PasswordHashing.js';
import type { RateLimiterShape } from '../../../app/RateLimiter.js';
import { requestHistory } from '../../../app/requestHistory.js';
import type { SessionsShape, StartedSession } from '../../../app/Sessions.js';
import { unavailableFor } from '../../../app/StorageHealth.js';
import { isThrottled } from '../../../app/throttle.js';
import { maxBacklogCounted } from '../../../app/webhooks/recover.js';
import type { WebhooksShape } from '../../../app/webhooks/Webhooks.js';
import type { Config } from '../../../config.js';
import { effectiveLimits } from '../../../domain/account/limits.js';
import type { AccountState } from '../../../domain/account/state.js';
import { Refused } from '../../../domain/errors.js';
import { couldBeId } from '../../../domain/identifiers.js';
import { queuedRequestOf } from '../../../domain/queuePosition.js';
import type { RequestEvent } from '../../../domain/request/events.js';
import { isExpired } from '../../../domain/request/questions.js';
import type { RequestState } from '../../../domain/request/state.js';
import { tokensUsed } from '../../../domain/tokens/tokenBudget.js';
import type { DeliveryState } from '../../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../../domain/webhook/endpoint.js';
import { webhookEventTypes } from '../../../domain/webhook/eventTypes.js';
import type { ClockShape } from '../../../ports/Clock.js';
import { type RequestPage, StorageFault, type StoreShape, type WebhookBacklog } from '../../../ports/Store.js';
import { dayStartOf } from '../../../storage/projection.js';
import { fileDownload } from '../fileDownload.js';
import { mountBatchPages } from './batchPages.js';
import { FormTooLarge, readForm } from './formBody.js';
import { cursorOf, cursorText, parseCursor } from './requestCursor.js';
import {
  anonymousCsrf,
  clearSessionCookie,
  csrfValid,
  pageHeaders,
  sessionCsrf,
  sessionToken,
  setSessionCookie,
} from './security.js';
import { shownLine, shownText } from './shownText.js';
import { plural } from './views/format.js';
import {
  type DeliveryRow,
  dashboardAssetPaths,
  dashboardCss,
  dashboardScript,
  errorPage,
  homePage,
  keysPage,
  loginPage,
  overviewPage,
  type RequestStatusView,
  type RequestsShown,
  requestPage,
  requestsPage,
  requestsShown,
  signupPage,
  type WebhookEndpointRow,
  type WebhooksView,
  webhookPage,
  webhooksPage,
} from './views/pages.js';
import { mountWebhookRecover } from './webhookRecoverRoute.js';

export type DashboardDeps = {
  readonly sessions: SessionsShape;
  readonly accounts: AccountsShape;
  readonly store: StoreShape;
  readonly rateLimiter: RateLimiterShape;
  readonly config: Config;
  readonly clock: ClockShape;
  readonly log: Logger;
  /** The account's webhook endpoints and deliveries (issue 30). */
  readonly webhooks: WebhooksShape;
  /** Batches as the API's routes change them: the Batches pages' Cancel (issue 42). */
  readonly batches: BatchesShape;
  /** False while the server stops: pages then answer 503. */
  readonly accepting?: () => boolean;
};

/** The logged-in account as a page needs it. */
type Visitor = { readonly token: string; readonly account: AccountState; readonly csrf: string };

const pageSize = 25;
/** A request's page shows at most this much of its input and of its answer. */
const shownChars = 10_000;
/** A request's page reads at most this many events of the log, and lists at most this many of its own. */
const historyBounds = { maxEventsRead: 20_000, maxEntries: 200 } as const;
/** Days of token usage the overview shows, today included. */
const usageDays = 7;
const dayMs = 86_400_000;
const hourMs = 3_600_000;

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

const send = (event: H3Event, status: number, markup: string) => {
  event.res.status = status;
  for (const [name, value] of Object.entries(pageHeaders)) event.res.headers.set(name, value);
  return html(raw(markup));
};

const seeOther = (event: H3Event, location: string) => {
  for (const [name, value] of Object.entries(pageHeaders)) event.res.headers.set(name, value);
  return redirect(location, 303);
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

/** How many deliveries an endpoint's page lists. */
const deliveryPageSize = 25;

/** An endpoint as the Webhooks pages show it (never its secret; a removed one is not listed). */
const endpointRowOf = (endpoint: WebhookEndpointState): WebhookEndpointRow => ({
  id: endpoint.endpointId,
  url: endpoint.url,
  events: endpoint.events,
  status: endpoint.status === 'disabled' ? 'disabled' : 'enabled',
  createdAt: endpoint.createdAt,
  lastDeliveredAt: endpoint.lastDeliveredAt,
  disabledAt: endpoint.disabledAt,
  failingSince: endpoint.status === 'enabled' ? endpoint.failingSince : undefined,
});

/** The same with its backlog and next attempt (issue 42). */
const endpointRowWith = (endpoint: WebhookEndpointState, backlog: WebhookBacklog): WebhookEndpointRow => ({
  ...endpointRowOf(endpoint),
  backlog,
});

const gaveUpWords = {
  retention: 'its retries ran out',
  endpoint_disabled: 'the endpoint was disabled',
  endpoint_removed: 'the endpoint was removed',
} as const;

/** Where the dashboard shows what an event is about: a request (`resp_X` is the Responses face of `req_X`). */
const dataHrefOf = (dataId: string): string | undefined => {
  if (couldBeId('request', dataId)) return `/dashboard/requests/${dataId}`;
  const asRequest = `req_${dataId.slice('resp_'.length)}`;
  return dataId.startsWith('resp_') && couldBeId('request', asRequest) ? `/dashboard/requests/${asRequest}` : undefined;
};

const deliveryRowOf = ({ status, context: c }: DeliveryState): DeliveryRow => ({
  id: c.deliveryId,
  eventType: c.eventType,
  dataId: c.dataId,
  dataHref: dataHrefOf(c.dataId),
  status: status === 'none' ? 'waiting' : status,
  gaveUpReason: status === 'gave_up' && c.gaveUpReason !== undefined ? gaveUpWords[c.gaveUpReason] : undefined,
  attempts: c.attempts,
  lastAttemptAt: c.lastAttemptAt,
  lastStatus: c.lastStatus,
  lastLatencyMs: c.lastLatencyMs,
  lastError: c.lastError,
  // A delivery recorded before issue 42 keeps only its last attempt: shown from its last attempt's fields.
  recentAttempts:
    c.recentAttempts ??
    (c.lastAttemptAt === undefined
      ? []
      : [
          {
            attempt: c.attempts,
            at: c.lastAttemptAt,
            status: c.lastStatus,
            latencyMs: c.lastLatencyMs,
            error: c.lastError,
          },
        ]),
  createdAt: c.createdAt,
});

/** The Requests page's filter (`?show=`): interactive requests when absent; a value not offered is no page. */
const shownOf = (value: string | null): RequestsShown | undefined =>
  value === null ? 'interactive' : requestsShown.find((shown) => shown === value);

/** A refusal's message as a sentence on a page: `a webhook URL must …` → `A webhook URL must ….` */
const sentence = (message: string) => {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
};

/** The store's fault under `error` (itself, or what it wraps: an effect that died of it), if any. */
const storageFaultIn = (error: unknown): StorageFault | undefined => {
  let cause = error;
  for (let depth = 0; depth < 4 && typeof cause === 'object' && cause !== null; depth++) {
    if (cause instanceof StorageFault) return cause;
    cause = (cause as { cause?: unknown }).cause;
  }
  return undefined;
};

/** The address a visitor's throttles count against: the socket's peer (a proxy in front counts as one visitor). */
const clientAddress = (event: H3Event): string => (event.req as { ip?: string }).ip ?? 'unknown';

/** Sets `Retry-After` to whole seconds (at least one) and returns them. */
const retryAfter = (event: H3Event, seconds: number): number => {
  const whole = Math.max(1, Math.ceil(seconds));
  event.res.headers.set('Retry-After', String(whole));
  return whole;
};

/** Every password-hashing slot and queue place is taken (PasswordHashing.ts): a moment's wait is enough. */
const busyMessage = (event: H3Event): string => {
  retryAfter(event, 2);
  return 'Too many logins and signups are being checked right now. Try again in a few seconds.';
};

/**
 * The account dashboard under /dashboard: signup, login, logout, overview, keys, requests, batches, webhooks. Server-rendered pages
 * (views/), plain forms with CSRF tokens, a session cookie; every change goes through the same
 * services, commands and log as the CLI's.
 */
export const mountDashboard = (app: H3, deps: DashboardDeps) => {
  /** The store failed under a page (its database cannot be reached, its disk fails): a 503 page to retry, as the API
   * answers. Anything else is a fault: one JSON line in the log (its stack in it), and a 500 page that shows none. */
  const storeFailed = (event: H3Event, error: unknown) => {
    const fault = storageFaultIn(error);
    if (fault === undefined) {
      deps.log.error({ err: error, path: event.url.pathname.slice(0, 200) }, 'request failed');
      return send(
        event,
        500,
        errorPage({
          status: 500,
          title: 'Something went wrong',
          message: 'The service could not answer this page. Try again in a few seconds.',
          loggedIn: false,
        }),
      );
    }
    const unavailable = unavailableFor(fault);
    event.res.headers.set('Retry-After', String(unavailable.retryAfterSeconds));
    return send(
      event,
      503,
      errorPage({
        status: 503,
        title: 'Temporarily unavailable',
        message: 'The service cannot reach its storage right now. Try again in a few seconds.',
        loggedIn: false,
      }),
    );
  };
  /** A stopping server answers every dashboard call with a 503 page (and closes the connection), as the API does. */
  const open =
    (handler: (event: H3Event) => unknown) =>
    (event: H3Event): unknown => {
      if (deps.accepting?.() !== false) {
        try {
          const answer = handler(event);
          return answer instanceof Promise ? answer.catch((error: unknown) => storeFailed(event, error)) : answer;
        } catch (error) {
          return storeFailed(event, error);
        }
      }
      event.res.headers.set('Retry-After', '5');
      event.res.headers.set('Connection', 'close');
      return send(
        event,
        503,
        errorPage({
          status: 503,
          title: 'Restarting',
          message: 'The service is restarting. Try again in a few seconds.',
          loggedIn: false,
        }),
      );
    };
  const routes = {
    get: (path: string, handler: (event: H3Event) => unknown) => app.get(path, open(handler)),
    post: (path: string, handler: (event: H3Event) => unknown) => app.post(path, open(handler)),
    all: (path: string, handler: (event: H3Event) => unknown) => app.all(path, open(handler)),
  };

  const run = <A, E>(effect: Effect.Effect<A, E>) => Effect.runPromise(Effect.result(effect));

  const visitor = async (event: H3Event): Promise<Visitor | undefined> => {
    const token = sessionToken(event);
    const session = await deps.sessions.current(token);
    const account = session === undefined ? undefined : await deps.store.reads.account(session.accountId);
    if (token === undefined || account === undefined) return undefined;
    return { token, account, csrf: sessionCsrf(token) };
  };

  const forbidden = (event: H3Event, who: Visitor | undefined) =>
    send(
      event,
      403,
      errorPage({
        status: 403,
        title: 'This form has expired',
        message: 'The page you sent it from is too old or was not ours. Go back, reload the page and try again.',
        loggedIn: who !== undefined,
        csrf: who?.csrf,
        email: who?.account.email,
      }),
    );

  /** A form past its bounds (formBody.ts): no browser sends one from these pages. */
  const tooLarge = (event: H3Event, who: Visitor | undefined, refused: FormTooLarge) =>
    send(
      event,
      413,
      errorPage({
        status: 413,
        title: 'This form is too large',
        message: `${refused.message} Go back, reload the page and try again.`,
        loggedIn: who !== undefined,
        csrf: who?.csrf,
        email: who?.account.email,
      }),
    );

  /** A page for logged-in visitors; others are sent to the login page. */
  const page = (render: (event: H3Event, who: Visitor) => string | Promise<string>) => async (event: H3Event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    return send(event, 200, await render(event, who));
  };

  /** A state-changing form of a logged-in visitor: its CSRF token first, then the change. */
  const action =
    (change: (event: H3Event, who: Visitor, form: URLSearchParams) => Promise<unknown>) => async (event: H3Event) => {
      const who = await visitor(event);
      const form = await readForm(event);
      if (form instanceof FormTooLarge) return tooLarge(event, who, form);
      if (form === undefined || !csrfValid(event, form.get('csrf'), who?.token)) return forbidden(event, who);
      if (who === undefined) return seeOther(event, '/dashboard/login');
      return change(event, who, form);
    };

  const startSession = (event: H3Event, started: StartedSession) => {
    setSessionCookie(event, started.token);
    return seeOther(event, '/dashboard');
  };

  // Assets: named with their content's hash in the pages' links, so they may be cached for good.
  const asset = (type: string, body: string) => (event: H3Event) => {
    event.res.headers.set('Content-Type', type);
    event.res.headers.set('Cache-Control', 'public, max-age=31536000, immutable');
    event.res.headers.set('X-Content-Type-Options', 'nosniff');
    return body;
  };
  routes.get(dashboardAssetPaths.css, asset('text/css; charset=utf-8', dashboardCss));
  routes.get(dashboardAssetPaths.js, asset('text/javascript; charset=utf-8', dashboardScript));

  // The URL `airs serve` prints: a page that leads to the dashboard and the API's documents.
  routes.get('/', (event) => send(event, 200, homePage()));

  routes.get('/dashboard/signup', async (event) =>
    (await visitor(event)) === undefined
      ? send(event, 200, signupPage({ csrf: anonymousCsrf(event) }))
      : seeOther(event, '/dashboard'),
  );
  routes.post('/dashboard/signup', async (event) => {
    const form = await readForm(event);
    if (form instanceof FormTooLarge) return tooLarge(event, undefined, form);
    if (form === undefined || !csrfValid(event, form.get('csrf'), undefined)) return forbidden(event, undefined);
    const email = form.get('email') ?? '';
    const started = await deps.sessions.signup(email, form.get('password') ?? '', clientAddress(event));
    const csrf = anonymousCsrf(event);
    if (isThrottled(started)) {
      const minutes = retryAfter(event, started.retryAfterMs / 1000) / 60;
      const error = `Too many accounts were created from your address. Try again in ${plural(Math.ceil(minutes), 'minute')}.`;
      return send(event, 429, signupPage({ csrf, email, error }));
    }
    if (isHashingBusy(started)) return send(event, 429, signupPage({ csrf, email, error: busyMessage(event) }));
    if (started instanceof Refused) return send(event, 400, signupPage({ csrf, email, error: started.message }));
    deps.log.info({ accountId: started.accountId }, 'dashboard signup');
    return startSession(event, started);
  });

  routes.get('/dashboard/login', async (event) =>
    (await visitor(event)) === undefined
      ? send(event, 200, loginPage({ csrf: anonymousCsrf(event) }))
      : seeOther(event, '/dashboard'),
  );
  routes.post('/dashboard/login', async (event) => {
    const form = await readForm(event);
    if (form instanceof FormTooLarge) return tooLarge(event, undefined, form);
    if (form === undefined || !csrfValid(event, form.get('csrf'), undefined)) return forbidden(event, undefined);
    const email = form.get('email') ?? '';
    const started = await deps.sessions.login(email, form.get('password') ?? '', clientAddress(event));
    const csrf = anonymousCsrf(event);
    if (isThrottled(started)) {
      const seconds = retryAfter(event, started.retryAfterMs / 1000);
      return send(event, 429, loginPage({ csrf, email, throttledMinutes: Math.ceil(seconds / 60) }));
    }
    if (isHashingBusy(started)) return send(event, 429, loginPage({ csrf, email, error: busyMessage(event) }));
    if (started instanceof Refused) return send(event, 401, loginPage({ csrf, email, error: started.message }));
    return startSession(event, started);
  });

  routes.post(
    '/dashboard/logout',
    action(async (event, who) => {
      await deps.sessions.logout(who.token);
      clearSessionCookie(event);
      return seeOther(event, '/dashboard/login');
    }),
  );

  routes.get(
    '/dashboard',
    page(async (_event, { account, csrf }) => {
      const limits = effectiveLimits(deps.config.plans, account);
      const now = deps.clock.now();
      const hourly = await deps.store.reads.requestCountsByHour(account.accountId, now - 24 * hourMs + 1, 24);
      return overviewPage({
        csrf,
        email: account.email,
        plan: account.plan,
        plans: deps.config.plans,
        limits,
        tokensUsed: tokensUsed(await deps.store.reads.tokenUse(account.accountId), now),
        keysUsed: account.activeKeys,
        maxKeys: limits.maxKeys,
        rate: {
          submits: await deps.rateLimiter.peek(account.accountId, limits, 'submits'),
          polls: await deps.rateLimiter.peek(account.accountId, limits, 'polls'),
        },
        requestsLast24h: hourly.reduce((sum, count) => sum + count, 0),
        tokensByDay: await deps.store.reads.usageByDay(
          account.accountId,
          dayStartOf(now) - (usageDays - 1) * dayMs,
          usageDays,
        ),
      });
    }),
  );

  const renderKeys = async (
    who: Visitor,
    extra: {
      newKey?: { key: string; name?: string };
      error?: string;
      deleted?: { prefix: string; name?: string };
    } = {},
  ) => {
    const active = (await deps.store.reads.keysOf(who.account.accountId)).filter((key) => key.revokedAt === undefined);
    const keys = await Promise.all(
      active.map(async (key) => ({
        id: key.keyId,
        name: key.name,
        prefix: key.prefix,
        createdAt: key.createdAt,
        lastUsedAt: await deps.store.reads.keyLastUsed(key.keyId),
        ...(key.expiresAt === undefined ? {} : { expiresAt: key.expiresAt }),
      })),
    );
    const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
    return keysPage({
      csrf: who.csrf,
      email: account.email,
      keys,
      maxKeys: effectiveLimits(deps.config.plans, account).maxKeys,
      ...extra,
    });
  };
  routes.get(
    '/dashboard/keys',
    page(async (event, who) => {
      // After a deletion (`?deleted=KEY_ID`): the notice names the key, only if it is this account's and deleted.
      const deletedId = event.url.searchParams.get('deleted');
      const key = deletedId !== null && couldBeId('key', deletedId) ? await deps.store.reads.key(deletedId) : undefined;
      const deleted =
        key !== undefined && key.accountId === who.account.accountId && key.revokedAt !== undefined
          ? { prefix: key.prefix, name: key.name }
          : undefined;
      return renderKeys(who, { deleted });
    }),
  );
  routes.post(
    '/dashboard/keys',
    action(async (event, who, form) => {
      const name = form.get('name')?.trim() || undefined;
      // Said in the page's words; the domain refuses the same case again inside the write (another tab, the CLI).
      const { maxKeys } = effectiveLimits(deps.config.plans, who.account);
      if (maxKeys !== null && who.account.activeKeys >= maxKeys) {
        const error = `Your ${who.account.plan} plan allows ${maxKeys} API key${maxKeys === 1 ? '' : 's'} and you have ${who.account.activeKeys}. Delete one to make a new one, or ask your operator for a larger plan.`;
        return send(event, 400, await renderKeys(who, { error }));
      }
      const created = await run(deps.accounts.createKey(who.account.accountId, name));
      if (Result.isFailure(created)) return send(event, 400, await renderKeys(who, { error: created.failure.message }));
      deps.log.info({ accountId: who.account.accountId, keyId: created.success.id }, 'dashboard key created');
      // The only page that ever shows the key: answered directly, never through a redirect that could be reloaded.
      return send(event, 201, await renderKeys(who, { newKey: { key: created.success.key, name } }));
    }),
  );
  routes.post(
    '/dashboard/keys/:id/delete',
    action(async (event, who) => {
      const keyId = event.context.params?.id ?? '';
      const key = couldBeId('key', keyId) ? await deps.store.reads.key(keyId) : undefined;
      // Another account's key is answered like an unknown one.
      if (key === undefined || key.accountId !== who.account.accountId) return notFound(event, who);
      const revoked = await run(deps.accounts.revokeKey(keyId));
      if (Result.isFailure(revoked)) return send(event, 400, await renderKeys(who, { error: revoked.failure.message }));
      deps.log.info({ accountId: who.account.accountId, keyId }, 'dashboard key deleted');
      // A redirect, so that a reload deletes nothing; the page it leads to says what was deleted.
      return seeOther(event, `/dashboard/keys?deleted=${encodeURIComponent(keyId)}`);
    }),
  );

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

  mountBatchPages({
    get: routes.get,
    post: routes.post,
    visitor,
    action: (change) => action((event, who) => change(event, who)),
    send,
    seeOther,
    notFound: (event, who) => notFound(event, who),
    store: deps.store,
    batches: deps.batches,
    now: () => deps.clock.now(),
    log: deps.log,
  });

  /**
   * The Webhooks pages (issue 30): the account's endpoints, adding one (its secret shown this once, as a new key's),
   * rotating its secret, removing and enabling it, and each endpoint's delivery log with Redeliver. Every change and
   * every list goes through the Webhooks service, as the CLI's do.
   */
  const mountWebhookPages = (webhooks: WebhooksShape) => {
    /** The account's endpoints (not removed), oldest first. The service refuses only an unknown account, which a
     * visitor's is not: a refusal is a fault (500), as the store's own faults are (503). */
    const endpointsOf = async (who: Visitor) => {
      const listed = await run(webhooks.list(who.account.accountId));
      if (Result.isFailure(listed)) throw listed.failure;
      return listed.success;
    };
    const renderWebhooks = async (
      who: Visitor,
      extra: Pick<WebhooksView, 'newSecret' | 'error' | 'form' | 'done'> = {},
    ) => {
      const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
      const listed = await run(webhooks.listWithBacklog(who.account.accountId));
      if (Result.isFailure(listed)) throw listed.failure;
      return webhooksPage({
        csrf: who.csrf,
        email: account.email,
        endpoints: listed.success.map(({ endpoint, backlog }) => endpointRowWith(endpoint, backlog)),
        maxEndpoints: effectiveLimits(deps.config.plans, account).maxWebhookEndpoints,
        eventTypes: webhookEventTypes,
        retentionHours: deps.config.webhooks.retentionHours,
        ...extra,
      });
    };
    /** One of the account's endpoints named by the path; another account's, a removed or an unknown one: none. */
    const ownEndpoint = async (event: H3Event, who: Visitor) => {
      const endpointId = event.context.params?.id ?? '';
      if (!couldBeId('webhookEndpoint', endpointId)) return undefined;
      return (await endpointsOf(who)).find((endpoint) => endpoint.endpointId === endpointId);
    };

    routes.get(
      '/dashboard/webhooks',
      page(async (event, who) => {
        // After a removal or an enabling (`?removed=ID`, `?enabled=ID`): the notice names the account's own endpoint.
        const query = event.url.searchParams;
        const removedId = query.get('removed') ?? '';
        const enabledId = query.get('enabled') ?? '';
        let done: WebhooksView['done'];
        if (couldBeId('webhookEndpoint', removedId)) {
          // A removed endpoint is no longer listed: its URL is read from the view (the account's own only).
          const removed = await deps.store.reads.webhookEndpoint(removedId);
          if (removed?.accountId === who.account.accountId && removed.status === 'removed')
            done = { what: 'removed', url: removed.url };
        } else if (couldBeId('webhookEndpoint', enabledId)) {
          const enabled = (await endpointsOf(who)).find((endpoint) => endpoint.endpointId === enabledId);
          if (enabled?.status === 'enabled') done = { what: 'enabled', url: enabled.url };
        }
        return renderWebhooks(who, { done });
      }),
    );

    routes.post(
      '/dashboard/webhooks',
      action(async (event, who, form) => {
        const url = (form.get('url') ?? '').trim();
        const events = form.getAll('events');
        const kept = { url: url.slice(0, 2_048), events: events.filter((name) => name.length <= 64) };
        const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
        // Said in the page's words; the domain counts again inside the write (another tab, the CLI).
        const bound = effectiveLimits(deps.config.plans, account).maxWebhookEndpoints;
        const count = (await endpointsOf(who)).length;
        if (count >= bound) {
          const error = `Your ${account.plan} plan allows ${plural(bound, 'webhook endpoint')} and you have ${count}. Remove one to add another, or ask your operator for a larger plan.`;
          return send(event, 400, await renderWebhooks(who, { error, form: kept }));
        }
        const added = await run(webhooks.add(who.account.accountId, url, events));
        if (Result.isFailure(added))
          return send(event, 400, await renderWebhooks(who, { error: sentence(added.failure.message), form: kept }));
        const { endpoint, secret } = added.success;
        deps.log.info({ accountId: who.account.accountId, endpointId: endpoint.endpointId }, 'dashboard webhook added');
        // The only page that ever shows the secret: answered directly, never through a redirect that could be reloaded.
        return send(
          event,
          201,
          await renderWebhooks(who, {
            newSecret: { endpointId: endpoint.endpointId, url: endpoint.url, secret, rotated: false },
          }),
        );
      }),
    );

    routes.post(
      '/dashboard/webhooks/:id/rotate',
      action(async (event, who) => {
        const endpoint = await ownEndpoint(event, who);
        if (endpoint === undefined) return notFound(event, who);
        const rotated = await run(webhooks.rotateSecret(who.account.accountId, endpoint.endpointId));
        if (Result.isFailure(rotated))
          return send(event, 400, await renderWebhooks(who, { error: sentence(rotated.failure.message) }));
        deps.log.info(
          { accountId: who.account.accountId, endpointId: endpoint.endpointId },
          'dashboard webhook secret rotated',
        );
        const { secret } = rotated.success;
        return send(
          event,
          200,
          await renderWebhooks(who, {
            newSecret: { endpointId: endpoint.endpointId, url: endpoint.url, secret, rotated: true },
          }),
        );
      }),
    );

    routes.post(
      '/dashboard/webhooks/:id/remove',
      action(async (event, who) => {
        const endpoint = await ownEndpoint(event, who);
        if (endpoint === undefined) return notFound(event, who);
        const removed = await run(webhooks.remove(who.account.accountId, endpoint.endpointId));
        if (Result.isFailure(removed))
          return send(event, 400, await renderWebhooks(who, { error: sentence(removed.failure.message) }));
        deps.log.info(
          { accountId: who.account.accountId, endpointId: endpoint.endpointId },
          'dashboard webhook removed',
        );
        // A redirect, so that a reload changes nothing; the page it leads to says what was removed.
        return seeOther(event, `/dashboard/webhooks?removed=${encodeURIComponent(endpoint.endpointId)}`);
      }),
    );

    routes.post(
      '/dashboard/webhooks/:id/enable',
      action(async (event, who) => {
        const endpoint = await ownEndpoint(event, who);
        if (endpoint === undefined) return notFound(event, who);
        const enabled = await run(webhooks.enable(who.account.accountId, endpoint.endpointId));
        if (Result.isFailure(enabled))
          return send(event, 400, await renderWebhooks(who, { error: sentence(enabled.failure.message) }));
        deps.log.info(
          { accountId: who.account.accountId, endpointId: endpoint.endpointId },
          'dashboard webhook enabled',
        );
        return seeOther(event, `/dashboard/webhooks?enabled=${encodeURIComponent(endpoint.endpointId)}`);
      }),
    );

    /** An endpoint's page: it, and one page of its deliveries (newest, or older than `?before=wh_…`). */
    const renderEndpoint = async (
      event: H3Event,
      who: Visitor,
      endpoint: WebhookEndpointState,
      extra: { error?: string; redelivered?: string; recovered?: { count: number; more: boolean } } = {},
    ) => {
      const before = event.url.searchParams.get('before') ?? undefined;
      if (before !== undefined && !couldBeId('webhookDelivery', before)) return undefined;
      const page = { limit: deliveryPageSize + 1, before };
      const listed = await run(webhooks.deliveries(who.account.accountId, endpoint.endpointId, page));
      // A cursor of no delivery of this endpoint is no page; without one, the endpoint was removed since it was
      // listed (another tab, the CLI): answered as gone.
      if (Result.isFailure(listed)) return before === undefined ? ('gone' as const) : undefined;
      // One more than shown says whether an older page is left.
      const shown = listed.success.slice(0, deliveryPageSize);
      return webhookPage({
        csrf: who.csrf,
        email: who.account.email,
        endpoint: endpointRowWith(
          endpoint,
          await deps.store.reads.webhookBacklog(endpoint.endpointId, maxBacklogCounted),
        ),
        deliveries: shown.map(deliveryRowOf),
        olderCursor: listed.success.length > deliveryPageSize ? shown.at(-1)?.context.deliveryId : undefined,
        older: before !== undefined,
        ...extra,
      });
    };
    routes.get('/dashboard/webhooks/:id', async (event) => {
      const who = await visitor(event);
      if (who === undefined) return seeOther(event, '/dashboard/login');
      const endpoint = await ownEndpoint(event, who);
      if (endpoint === undefined) return notFound(event, who);
      // After a redelivery (`?redelivered=wh_…`): a delivery of this endpoint (its id ends with the endpoint's).
      const redelivered = event.url.searchParams.get('redelivered') ?? '';
      // After a recover (`?recovered=N[&more=1]`): how many were made due again.
      const recoveredCount = event.url.searchParams.get('recovered') ?? '';
      const markup = await renderEndpoint(event, who, endpoint, {
        recovered: /^\d{1,5}$/.test(recoveredCount)
          ? { count: Number(recoveredCount), more: event.url.searchParams.get('more') === '1' }
          : undefined,
        redelivered:
          couldBeId('webhookDelivery', redelivered) && redelivered.endsWith(endpoint.endpointId.slice('whep_'.length))
            ? redelivered
            : undefined,
      });
      if (markup === 'gone') return notFound(event, who);
      if (markup !== undefined) return send(event, 200, markup);
      return send(
        event,
        400,
        errorPage({
          status: 400,
          title: 'Not a page of deliveries',
          message:
            'This link does not name a page of this endpoint’s deliveries (it may have been cut short). Start again from the newest.',
          loggedIn: true,
          csrf: who.csrf,
          email: who.account.email,
        }),
      );
    });

    routes.post(
      '/dashboard/webhooks/:id/deliveries/:deliveryId/redeliver',
      action(async (event, who) => {
        const endpoint = await ownEndpoint(event, who);
        const deliveryId = event.context.params?.deliveryId ?? '';
        if (endpoint === undefined || !couldBeId('webhookDelivery', deliveryId)) return notFound(event, who);
        const redelivered = await run(webhooks.redeliver(who.account.accountId, deliveryId));
        if (Result.isFailure(redelivered)) {
          const markup = await renderEndpoint(event, who, endpoint, { error: sentence(redelivered.failure.message) });
          return markup === undefined || markup === 'gone' ? notFound(event, who) : send(event, 400, markup);
        }
        deps.log.info({ accountId: who.account.accountId, deliveryId }, 'dashboard webhook redelivered');
        const endpointId = redelivered.success.context.endpointId;
        return seeOther(
          event,
          `/dashboard/webhooks/${encodeURIComponent(endpointId)}?redelivered=${encodeURIComponent(deliveryId)}`,
        );
      }),
    );

    mountWebhookRecover({
      post: routes.post,
      action,
      ownEndpoint,
      accountOf: (who: Visitor) => who.account.accountId,
      // Declared further down (a const): looked up when a request comes, not now.
      notFound: (event, who) => notFound(event, who),
      seeOther,
      refused: async (event, who, endpoint, message) => {
        const markup = await renderEndpoint(event, who, endpoint, { error: message });
        return markup === undefined || markup === 'gone' ? notFound(event, who) : send(event, 400, markup);
      },
      webhooks,
      run,
      now: () => deps.clock.now(),
      logRecovered: (accountId, endpointId, redelivered) =>
        deps.log.info({ accountId, endpointId, redelivered }, 'dashboard webhook deliveries recovered'),
    });
  };

  mountWebhookPages(deps.webhooks);

  // A file's bytes for its own account's session (the API's /v1/files/{id}/content takes a key, which a browser
  // holding only the session cookie has not): streamed, never whole in memory. Another account's file is unknown.
  routes.get('/dashboard/files/:id', async (event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    const fileId = event.context.params?.id ?? '';
    const file = couldBeId('file', fileId) ? await deps.store.reads.file(fileId) : undefined;
    if (file === undefined || file.accountId !== who.account.accountId) return notFound(event, who);
    const download = await fileDownload(file, deps.store.files.read(fileId), pageHeaders);
    return download ?? notFound(event, who);
  });

  const notFound = (event: H3Event, who: Visitor | undefined) =>
    send(
      event,
      404,
      errorPage({
        status: 404,
        title: 'Not found',
        message: 'There is nothing at this address.',
        loggedIn: who !== undefined,
        csrf: who?.csrf,
        email: who?.account.email,
      }),
    );
  routes.all('/dashboard/**', async (event) => notFound(event, await visitor(event)));
};
