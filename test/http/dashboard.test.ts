import { afterEach, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/testApp.js';

const password = 'correct horse battery staple';

/** A browser in miniature: keeps the cookies the app sets and sends them back. */
const browser = (app: TestApp) => {
  const jar = new Map<string, string>();
  const request = async (method: string, path: string, form?: Record<string, string>) => {
    const headers: Record<string, string> = {};
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await app.http.request(`http://airs.test${path}`, {
      method,
      headers,
      body: form === undefined ? undefined : new URLSearchParams(form).toString(),
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const [name, value] = (pair as string).split('=') as [string, string];
      if (value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return { status: response.status, headers: response.headers, text: await response.text() };
  };
  const csrfOf = (text: string) => /name="csrf" value="([^"]+)"/.exec(text)?.[1] ?? '';
  return {
    jar,
    get: (path: string) => request('GET', path),
    post: (path: string, form: Record<string, string>) => request('POST', path, form),
    csrfOf,
    signup: async (email: string) => {
      const form = await request('GET', '/dashboard/signup');
      return request('POST', '/dashboard/signup', { email, password, csrf: csrfOf(form.text) });
    },
  };
};

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
    const accountId = app.store.reads.accountIdByEmail('csrf@example.com') as string;
    const forged = await visitor.post('/dashboard/keys', { name: 'forged' });
    expect(forged.status).toBe(403);
    const wrong = await visitor.post('/dashboard/keys', { name: 'forged', csrf: 'x'.repeat(43) });
    expect(wrong.status).toBe(403);
    expect(app.store.reads.keysOf(accountId)).toEqual([]);
    const keys = await visitor.get('/dashboard/keys');
    const made = await visitor.post('/dashboard/keys', { name: 'real', csrf: visitor.csrfOf(keys.text) });
    expect(made.status).toBe(201);
    expect(app.store.reads.keysOf(accountId)).toHaveLength(1);
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
    expect(app.sessions.current(token)).toBeUndefined();
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
});
