import type { TestApp } from './testApp.js';

/**
 * A dashboard page's CSRF token and the cookie that goes with it, as a browser that loaded the page holds them
 * (`page`: the page's answer, e.g. `app.call('GET', '/dashboard/signup')`).
 */
export const formTokensOf = async (page: Response) => {
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  const cookie = page.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  return { csrf, cookie };
};

/** The password the dashboard's tests sign up with. */
export const dashboardPassword = 'correct horse battery staple';

/** What a session browser visits: a test app in process, or a server on a socket by its URL (`airs serve`). */
export type Site = TestApp | { readonly url: string };

/**
 * A browser in miniature: keeps the cookies the site sets and sends them back. `jar` starts it with cookies another
 * browser held (a session carried to a copy of the store).
 */
export const sessionBrowser = (site: Site, jar = new Map<string, string>()) => {
  const send = (path: string, init: RequestInit) =>
    'http' in site ? site.http.request(`http://airs.test${path}`, init) : fetch(`${site.url}${path}`, init);
  const request = async (method: string, path: string, form?: Record<string, string>) => {
    const headers: Record<string, string> = {};
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await send(path, {
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
      return request('POST', '/dashboard/signup', { email, password: dashboardPassword, csrf: csrfOf(form.text) });
    },
    login: async (email: string, pass = dashboardPassword) => {
      const form = await request('GET', '/dashboard/login');
      return request('POST', '/dashboard/login', { email, password: pass, csrf: csrfOf(form.text) });
    },
  };
};
