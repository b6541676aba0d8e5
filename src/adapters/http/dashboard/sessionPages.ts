import type { H3Event } from 'h3';
import { isHashingBusy } from '../../../app/PasswordHashing.js';
import type { StartedSession } from '../../../app/Sessions.js';
import { isThrottled } from '../../../app/throttle.js';
import { Refused } from '../../../domain/errors.js';
import { FormTooLarge, readForm } from './formBody.js';
import { type DashboardKit, seeOther, send } from './pageKit.js';
import { anonymousCsrf, clearSessionCookie, csrfValid, setSessionCookie } from './security.js';
import { plural } from './views/format.js';
import { loginPage, signupPage } from './views/pages.js';

/** The session pages of the dashboard: signup, login and logout, with their throttles. */

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

export const mountSessionPages = ({ deps, routes, visitor, forbidden, tooLarge, action }: DashboardKit) => {
  const startSession = (event: H3Event, started: StartedSession) => {
    setSessionCookie(event, started.token);
    return seeOther(event, '/dashboard');
  };

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
};
