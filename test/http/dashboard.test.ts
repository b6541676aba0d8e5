import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config.js';
import type { ManualClock } from '../../src/ports/Clock.js';
import { sessionBrowser as browser, dashboardPassword } from '../support/dashboardForm.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

const password = dashboardPassword;

describe('The dashboard over HTTP (in process)', () => {
  let app: TestApp;
  afterEach(() => app.stop());

  it('sends a visitor without a session from every page but signup and login to the login page', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/requests']) {
      const answer = await visitor.get(path);
      expect(answer.status, path).toBe(303);
      expect(answer.headers.get('location')).toBe('/dashboard/login');
    }
    expect((await visitor.get('/dashboard/login')).status).toBe(200);
    expect((await visitor.get('/dashboard/signup')).status).toBe(200);
  });

  it('signs up into a session cookie that is HttpOnly and SameSite=Lax, and answers pages with a strict CSP', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    const form = await visitor.get('/dashboard/signup');
    const signedUp = await visitor.post('/dashboard/signup', {
      email: 'new@example.com',
      password,
      csrf: visitor.csrfOf(form.text),
    });
    expect(signedUp.status).toBe(303);
    expect(signedUp.headers.get('location')).toBe('/dashboard');
    const cookie = signedUp.headers.getSetCookie().find((c) => c.startsWith('airs_session='));
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toMatch(/Secure/);
    const overview = await visitor.get('/dashboard');
    expect(overview.status).toBe(200);
    expect(overview.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(overview.text).toContain('new@example.com');
  });

  it('refuses a post without the right CSRF token with 403 and changes nothing', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    await visitor.signup('csrf@example.com');
    const accountId = (await app.store.reads.accountIdByEmail('csrf@example.com')) as string;
    const forged = await visitor.post('/dashboard/keys', { name: 'forged' });
    expect(forged.status).toBe(403);
    const wrong = await visitor.post('/dashboard/keys', { name: 'forged', csrf: 'x'.repeat(43) });
    expect(wrong.status).toBe(403);
    expect(await app.store.reads.keysOf(accountId)).toEqual([]);
    const keys = await visitor.get('/dashboard/keys');
    const made = await visitor.post('/dashboard/keys', { name: 'real', csrf: visitor.csrfOf(keys.text) });
    expect(made.status).toBe(201);
    expect(await app.store.reads.keysOf(accountId)).toHaveLength(1);
  });

  it('shows a new key once, and the next call with it after its deletion answers 401', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    await visitor.signup('keys@example.com');
    const keys = await visitor.get('/dashboard/keys');
    const made = await visitor.post('/dashboard/keys', { name: 'laptop', csrf: visitor.csrfOf(keys.text) });
    const key = /sk_[\w-]{43}/.exec(made.text)?.[0] as string;
    expect(key).toBeDefined();
    expect((await visitor.get('/dashboard/keys')).text).not.toContain(key);
    const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: 'hi' } });
    expect(submitted.status).toBe(202);
    const keyId = /\/dashboard\/keys\/(key_[\w-]+)\/delete/.exec((await visitor.get('/dashboard/keys')).text)?.[1];
    const deleted = await visitor.post(`/dashboard/keys/${keyId}/delete`, { csrf: visitor.csrfOf(keys.text) });
    expect(deleted.status).toBe(303);
    expect((await app.call('GET', '/v1/ai?req_id=req_x', { key })).status).toBe(401);
  });

  it('does not let one account delete another account’s key', async () => {
    app = await startTestApp();
    const other = await app.account();
    const visitor = browser(app);
    await visitor.signup('thief@example.com');
    const page = await visitor.get('/dashboard/keys');
    const answer = await visitor.post(`/dashboard/keys/${other.keyId}/delete`, { csrf: visitor.csrfOf(page.text) });
    expect(answer.status).toBe(404);
    expect((await app.call('GET', '/v1/ai?req_id=req_x', { key: other.key })).status).toBe(404);
  });

  it('logs out: the session ends and the pages lead to login again', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    await visitor.signup('out@example.com');
    const overview = await visitor.get('/dashboard');
    const token = visitor.jar.get('airs_session') as string;
    const out = await visitor.post('/dashboard/logout', { csrf: visitor.csrfOf(overview.text) });
    expect(out.status).toBe(303);
    expect(await app.sessions.current(token)).toBeUndefined();
    expect((await visitor.get('/dashboard')).status).toBe(303);
  });

  it('answers an unknown dashboard path with a 404 page', async () => {
    app = await startTestApp();
    const answer = await browser(app).get('/dashboard/nothing-here');
    expect(answer.status).toBe(404);
    expect(answer.headers.get('content-type')).toContain('text/html');
  });

  it('answers with a 503 page and Retry-After while the server stops', async () => {
    app = await startTestApp();
    app.stopAccepting();
    const answer = await browser(app).get('/dashboard/login');
    expect(answer.status).toBe(503);
    expect(answer.headers.get('retry-after')).toBe('5');
    expect(answer.text).toContain('restarting');
  });

  it('answers / with a small page that leads to login, signup and the API documents, with nothing from another origin', async () => {
    app = await startTestApp();
    const home = await browser(app).get('/');
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toContain('text/html');
    expect(home.headers.get('content-security-policy')).toContain("default-src 'none'");
    for (const link of ['/dashboard/login', '/dashboard/signup', '/v1/openapi.json'])
      expect(home.text).toContain(`href="${link}"`);
    expect(home.text).toContain('docs/api.md');
    expect(home.text).not.toMatch(/(?:href|src|action)="(?:https?:)?\/\//);
    // Only the page is new: other methods on / are still the API's JSON 404.
    const posted = await app.call('POST', '/');
    expect(posted.status).toBe(404);
    expect(posted.headers.get('content-type')).toContain('application/json');
  });

  it('refuses a signup whose email holds control characters, saying so, and creates nothing', async () => {
    app = await startTestApp();
    const answer = await browser(app).signup('evil\u001b[2J@example.com');
    expect(answer.status).toBe(400);
    expect(answer.text).toContain('must not contain control characters');
    expect([...(await app.store.reads.accounts())]).toEqual([]);
  });

  it('throttles signups per address: past dashboard.signupsPerHour a 429 page says when to try again', async () => {
    app = await startTestApp({ config: { dashboard: { ...defaultConfig().dashboard, signupsPerHour: 2 } } });
    const visitor = browser(app);
    expect((await visitor.signup('one@example.com')).status).toBe(303);
    visitor.jar.delete('airs_session');
    expect((await visitor.signup('two@example.com')).status).toBe(303);
    visitor.jar.delete('airs_session');
    const third = await visitor.signup('three@example.com');
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toBe('3600');
    expect(third.text).toContain('Try again in 60 minutes.');
    expect(await app.store.reads.accountIdByEmail('three@example.com')).toBeUndefined();
    // A refused form (a short password here) costs no hash and takes no place.
    const refused = await visitor.post('/dashboard/signup', {
      email: 'four@example.com',
      password: 'short',
      csrf: visitor.csrfOf((await visitor.get('/dashboard/signup')).text),
    });
    expect(refused.status).toBe(400);
  });

  it('answers a 429 page when every password-hashing slot and queue place is taken, and a login refused so counts as no failure', async () => {
    app = await startTestApp({
      config: { dashboard: { signupsPerHour: 0, hashingConcurrency: 1, hashingQueue: 0 } },
    });
    await browser(app).signup('busy@example.com');
    // Four wrong passwords at once (fewer than the login throttle's five): one is hashed, the queue holds none, the
    // others are refused (all three, unless the machine is so slow that the first hash ends before the last arrives).
    const visitors = Array.from({ length: 4 }, () => browser(app));
    const forms = await Promise.all(visitors.map((visitor) => visitor.get('/dashboard/login')));
    const answers = await Promise.all(
      visitors.map((visitor, i) =>
        visitor.post('/dashboard/login', {
          email: 'busy@example.com',
          password: 'not the password',
          csrf: visitor.csrfOf((forms[i] as { text: string }).text),
        }),
      ),
    );
    const busy = answers.filter((answer) => answer.status === 429);
    expect(busy.length).toBeGreaterThan(0);
    for (const answer of busy) {
      expect(answer.headers.get('retry-after')).toBe('2');
      expect(answer.text).toContain('Try again in a few seconds.');
    }
    const checked = answers.filter((answer) => answer.status === 401).length;
    expect(checked).toBe(4 - busy.length);
    // Only the checked ones were failures: the email has the rest of its five before it is throttled.
    const later: number[] = [];
    for (let i = 0; i < 5 - checked; i++)
      later.push((await browser(app).login('busy@example.com', 'still wrong!')).status);
    expect(later).toEqual(new Array(5 - checked).fill(401));
    expect((await browser(app).login('busy@example.com')).status).toBe(429);
  });

  it('pages requests by cursor: each page reads one page of rows, however far back, and old page numbers lead to the newest', async () => {
    app = await startTestApp();
    const visitor = browser(app);
    await visitor.signup('pages@example.com');
    const accountId = (await app.store.reads.accountIdByEmail('pages@example.com')) as string;
    const key = await Effect.runPromise(app.accounts.createKey(accountId));
    for (let i = 0; i < 80; i++) {
      (app.clock as ManualClock).advance(1_000);
      expect(
        (await app.call('POST', '/v1/ai', { key: key.key, body: { model: 'echo', prompt: `p${i}` } })).status,
      ).toBe(202);
    }
    // Rows the store reads for each page view (an observer around the real read).
    let rowsRead = 0;
    const reads = app.store.reads;
    const requestsOf = reads.requestsOf.bind(reads);
    reads.requestsOf = async (id, page) => {
      const rows = await requestsOf(id, page);
      rowsRead += rows.length;
      return rows;
    };
    const idsOn = (text: string) => [...text.matchAll(/<code>(req_[\w-]+)<\/code>/g)].map((m) => m[1]);
    const link = (text: string, label: 'Older' | 'Newer') =>
      (label === 'Older' ? /href="([^"]+)">Older →/ : /href="([^"]+)">← Newer/)
        .exec(text)?.[1]
        ?.replaceAll('&amp;', '&');
    const pages: string[][] = [];
    let path: string | undefined = '/dashboard/requests';
    while (path !== undefined) {
      rowsRead = 0;
      const page = await visitor.get(path);
      expect(page.status).toBe(200);
      expect(rowsRead, path).toBeLessThanOrEqual(2 * 26);
      pages.push(idsOn(page.text) as string[]);
      path = link(page.text, 'Older');
    }
    expect(pages.map((ids) => ids.length)).toEqual([25, 25, 25, 5]);
    expect(new Set(pages.flat()).size).toBe(80);
    // Back from the last page: Newer gives the page before it again.
    const last = await visitor.get(
      `/dashboard/requests?before=${/before=([^"]+)/.exec((await visitor.get('/dashboard/requests')).text)?.[1]}`,
    );
    const newer = await visitor.get(link(last.text, 'Newer') as string);
    expect(idsOn(newer.text)).toEqual(pages[0]);
    // Old links by page number, and links that name no page.
    const numbered = await visitor.get('/dashboard/requests?page=400');
    expect(numbered.status).toBe(303);
    expect(numbered.headers.get('location')).toBe('/dashboard/requests');
    for (const bad of [
      '?before=x',
      '?after=1.req_a&before=1.req_b',
      `?before=1.${'a'.repeat(200)}`,
      '?show=everything',
      `?show=${'batch'.repeat(100)}`,
    ]) {
      const answer = await visitor.get(`/dashboard/requests${bad}`);
      expect(answer.status, bad).toBe(400);
      expect(answer.text).toContain('does not name a page of your requests');
    }
  });
});
