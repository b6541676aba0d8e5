import * as Effect from 'effect/Effect';
import { type H3, type H3Event, html, raw, redirect } from 'h3';
import type { Logger } from 'pino';
import type { AccountsShape } from '../../../app/Accounts.js';
import type { BatchesShape } from '../../../app/batches/Batches.js';
import type { RateLimiterShape } from '../../../app/RateLimiter.js';
import type { SessionsShape } from '../../../app/Sessions.js';
import { unavailableFor } from '../../../app/StorageHealth.js';
import type { WebhooksShape } from '../../../app/webhooks/Webhooks.js';
import type { Config } from '../../../config.js';
import type { AccountState } from '../../../domain/account/state.js';
import type { ClockShape } from '../../../ports/Clock.js';
import { StorageFault, type StoreShape } from '../../../ports/Store.js';
import { FormTooLarge, readForm } from './formBody.js';
import { csrfValid, pageHeaders, sessionCsrf, sessionToken } from './security.js';
import { errorPage } from './views/pages.js';

/**
 * What every page of the dashboard builds on: its dependencies, the logged-in visitor, how a page answers, and the
 * guards around a handler (a stopping server, the store's faults, the session, CSRF).
 */

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
export type Visitor = { readonly token: string; readonly account: AccountState; readonly csrf: string };

export const send = (event: H3Event, status: number, markup: string) => {
  event.res.status = status;
  for (const [name, value] of Object.entries(pageHeaders)) event.res.headers.set(name, value);
  return html(raw(markup));
};

export const seeOther = (event: H3Event, location: string) => {
  for (const [name, value] of Object.entries(pageHeaders)) event.res.headers.set(name, value);
  return redirect(location, 303);
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

/** The dashboard's helpers over `app`: its routes (each behind the guards), the visitor, and its answers. */
export const dashboardKit = (app: H3, deps: DashboardDeps) => {
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
  // Typed `H3`: the kit's type is exported, and the type these calls infer is h3's internal name for it.
  const routes = {
    get: (path: string, handler: (event: H3Event) => unknown): H3 => app.get(path, open(handler)),
    post: (path: string, handler: (event: H3Event) => unknown): H3 => app.post(path, open(handler)),
    all: (path: string, handler: (event: H3Event) => unknown): H3 => app.all(path, open(handler)),
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

  return { deps, routes, run, visitor, forbidden, tooLarge, page, action, notFound };
};

/** The helpers a group of pages is mounted with. */
export type DashboardKit = ReturnType<typeof dashboardKit>;
