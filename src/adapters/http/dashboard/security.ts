import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import { getCookie, type H3Event, setCookie } from 'h3';
import { sessionLifetimeMs } from '../../../app/Sessions.js';

/**
 * The dashboard's browser security: the session cookie, CSRF tokens and the headers every page carries
 * (product contract, section 9).
 */

export const sessionCookie = 'airs_session';
/** Before login there is no session to tie a form to: a random value in a cookie and the same in the form. */
const anonymousCookie = 'airs_csrf';

const cookieOptions = (event: H3Event) =>
  ({
    httpOnly: true,
    sameSite: 'lax',
    path: '/dashboard',
    // Secure over TLS (directly, or through a proxy that says so): a cookie sent in clear would give the session away.
    secure: event.url.protocol === 'https:' || event.req.headers.get('x-forwarded-proto') === 'https',
  }) as const;

export const setSessionCookie = (event: H3Event, token: string) =>
  setCookie(event, sessionCookie, token, { ...cookieOptions(event), maxAge: sessionLifetimeMs / 1000 });

export const clearSessionCookie = (event: H3Event) =>
  setCookie(event, sessionCookie, '', { ...cookieOptions(event), maxAge: 0 });

export const sessionToken = (event: H3Event) => getCookie(event, sessionCookie);

/** A logged-in form's token: derived from the session's own token, which only its holder's browser has (an
 * attacker's page can neither read the cookie nor compute this), and stable across restarts. */
export const sessionCsrf = (token: string) => hash('sha256', `csrf\u0000${token}`, 'base64url');

/** The token for a logged-out form: the anonymous cookie's value, set now if the browser has none. */
export const anonymousCsrf = (event: H3Event): string => {
  const existing = getCookie(event, anonymousCookie);
  if (existing !== undefined && /^[\w-]{22,64}$/.test(existing)) return existing;
  const fresh = randomBytes(18).toString('base64url');
  setCookie(event, anonymousCookie, fresh, cookieOptions(event));
  return fresh;
};

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** Whether a posted form's `csrf` field is the one this browser was given (for its session, or before login). */
export const csrfValid = (event: H3Event, field: string | null, token: string | undefined): boolean => {
  if (field === null || field.length > 200) return false;
  if (token !== undefined) return same(field, sessionCsrf(token));
  const cookie = getCookie(event, anonymousCookie);
  return cookie !== undefined && same(field, cookie);
};

/** Nothing from another origin, no inline script or style, no framing; pages are never cached. */
export const pageHeaders: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'X-Frame-Options': 'DENY',
  'Cache-Control': 'no-store',
};
