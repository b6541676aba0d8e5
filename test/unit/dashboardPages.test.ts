import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type BatchesView,
  batchesPage,
  dashboardAssetPaths,
  dashboardAssetUrls,
  dashboardCss,
  dashboardScript,
  errorPage,
  homePage,
  type KeysView,
  keysPage,
  loginPage,
  type OverviewView,
  overviewPage,
  type RequestsView,
  requestsPage,
  signupPage,
} from '../../src/adapters/http/dashboard/views/pages.js';
import { effectiveLimits } from '../../src/domain/account/limits.js';
import { defaultPlans } from '../../src/domain/plans.js';

const evil = `<script>alert(1)</script>"'&`;
const csrf = 'csrf_tok-123';
const now = Date.UTC(2026, 10, 23, 19, 30, 5);
const hour = 3_600_000;

const overview = (over: Partial<OverviewView> = {}): OverviewView => ({
  csrf,
  email: 'ada@example.org',
  plan: 'starter',
  plans: defaultPlans,
  limits: effectiveLimits(defaultPlans, { plan: 'starter' }),
  tokensUsed: { tokensPerMinute: 0, tokensPerDay: 0, tokensPerMonth: 0 },
  keysUsed: 2,
  maxKeys: 3,
  rate: {
    submits: { remaining: 598, limit: 600, resetSeconds: 1 },
    polls: { remaining: 6000, limit: 6000, resetSeconds: 0 },
  },
  requestsLast24h: 1234,
  tokensByDay: [
    { day: Date.UTC(2026, 10, 22), inputTokens: 0, outputTokens: 0 },
    { day: Date.UTC(2026, 10, 23), inputTokens: 12_345, outputTokens: 678 },
  ],
  ...over,
});

const keys = (over: Partial<KeysView> = {}): KeysView => ({
  csrf,
  email: 'ada@example.org',
  maxKeys: 3,
  keys: [
    { id: 'key_a1', name: 'ci runner', prefix: 'sk_AbCd', createdAt: now - 48 * hour, lastUsedAt: now - hour },
    { id: 'key_b2', prefix: 'sk_EfGh', createdAt: now - 2 * hour },
  ],
  ...over,
});

const hourly = Array.from({ length: 24 }, (_, i) => (i * 7) % 11);

const requests = (over: Partial<RequestsView> = {}): RequestsView => ({
  csrf,
  email: 'ada@example.org',
  requests: [
    {
      id: 'req_old',
      model: 'echo',
      status: 'completed',
      createdAt: now - 3 * hour,
      completedAt: now - 3 * hour + 2000,
    },
    { id: 'req_new', model: 'gpt-x', status: 'queued', createdAt: now - 60_000 },
    { id: 'req_mid', model: 'echo', status: 'failed', createdAt: now - 2 * hour },
  ],
  show: 'interactive',
  hourly,
  now,
  ...over,
});

/** What a batch row holds besides its counts: no usage, no metadata, not ended, not cancellable unless told. */
const batchExtras = { inputTokens: 0, outputTokens: 0, metadata: {}, ended: false, cancellable: false };

const batches = (over: Partial<BatchesView> = {}): BatchesView => ({
  csrf,
  email: 'ada@example.org',
  batches: [
    {
      id: 'batch_done',
      status: 'completed',
      endpoint: '/v1/chat/completions',
      model: 'echo',
      createdAt: now - 2 * hour,
      total: 10,
      completed: 9,
      failed: 1,
      outputFileId: 'file-out',
      errorFileId: 'file-err',
      ...batchExtras,
      ended: true,
    },
    {
      id: 'batch_running',
      status: 'in_progress',
      endpoint: '/v1/responses',
      createdAt: now - 60_000,
      ...batchExtras,
      total: 1_200,
      completed: 300,
      failed: 0,
    },
  ],
  ...over,
});

/** Every page the module can render, logged in or not, with the data each needs. */
const allPages: Record<string, string> = {
  home: homePage(),
  signup: signupPage({ csrf }),
  signupRefused: signupPage({ csrf, email: 'x@example.org', error: 'That email already has an account.' }),
  login: loginPage({ csrf }),
  loginThrottled: loginPage({ csrf, email: 'x@example.org', throttledMinutes: 7 }),
  overview: overviewPage(overview()),
  keys: keysPage(keys()),
  keysEmpty: keysPage(keys({ keys: [] })),
  keysNew: keysPage(keys({ newKey: { key: 'sk_fullsecretvalue', name: 'ci' } })),
  requests: requestsPage(requests()),
  requestsEmpty: requestsPage(requests({ requests: [], hourly: new Array(24).fill(0) })),
  batches: batchesPage(batches()),
  batchesEmpty: batchesPage(batches({ batches: [] })),
  error403: errorPage({ status: 403, title: 'Form expired', message: 'Reload and try again.', loggedIn: true, csrf }),
  error404: errorPage({ status: 404, title: 'Not found', message: 'No such page.', loggedIn: false }),
  error429: errorPage({ status: 429, title: 'Too many logins', message: 'Wait 15 minutes.', loggedIn: false }),
  error500: errorPage({ status: 500, title: 'Something broke', message: 'Try again later.', loggedIn: true }),
};

const count = (haystack: string, needle: string): number => haystack.split(needle).length - 1;

/** The `<form …>…</form>` blocks of a page (forms never nest). */
const forms = (html: string): string[] => html.match(/<form\b[\s\S]*?<\/form>/g) ?? [];

/** The `<rect class="bar" …>` elements of the chart, with their numeric attributes. */
const bars = (html: string) =>
  [...html.matchAll(/<rect class="bar"([^>]*)>/g)].map((m) => {
    const attr = (name: string) => Number(new RegExp(`\\b${name}="([^"]*)"`).exec(m[1]!)![1]);
    return { y: attr('y'), height: attr('height'), count: attr('data-count') };
  });

describe('dashboard pages', () => {
  it.each(Object.entries(allPages))('%s renders a complete document with the local assets', (_, html) => {
    expect(html.startsWith('<!DOCTYPE html><html lang="en">')).toBe(true);
    expect(html.endsWith('</html>')).toBe(true);
    expect(html).toContain('<meta charset="utf-8"/>');
    expect(html).toContain('<meta name="viewport" content="width=device-width, initial-scale=1"/>');
    expect(html).toMatch(/<title>[^<]+ · airs<\/title>/);
    expect(html).toContain(`<link rel="stylesheet" href="${dashboardAssetUrls.css}"/>`);
    expect(html).toContain(`<script src="${dashboardAssetUrls.js}" defer></script>`);
    expect(dashboardAssetUrls.css.startsWith(`${dashboardAssetPaths.css}?v=`)).toBe(true);
    expect(dashboardAssetUrls.js.startsWith(`${dashboardAssetPaths.js}?v=`)).toBe(true);
  });

  it.each(Object.entries(allPages))('%s names no other origin and has no inline script or style', (_, html) => {
    expect(html).not.toMatch(/https?:|\/\/[a-z0-9]/i);
    expect(html).not.toMatch(/(?:href|src|action)="(?!\/|#|\?|data:,")/);
    expect(html).not.toMatch(/\sstyle=|<style|\son[a-z]+=/i);
    expect([...html.matchAll(/<script\b[^>]*>/g)].every((m) => m[0].includes(' src="/dashboard/assets/'))).toBe(true);
    expect(count(html, '<script')).toBe(1);
  });

  it('the assets themselves fetch nothing', () => {
    expect(dashboardCss).not.toMatch(/url\(|@import|https?:/);
    expect(dashboardScript).not.toMatch(/https?:|fetch\(|XMLHttpRequest|import\(/);
  });

  it('shows user text escaped, as text, in content and attributes', () => {
    const pages = [
      overviewPage(overview({ email: evil })),
      keysPage(
        keys({ email: evil, keys: [{ id: 'key_x', name: evil, prefix: 'sk_Zz', createdAt: now }], error: evil }),
      ),
      requestsPage(
        requests({ email: evil, requests: [{ id: 'req_1', model: evil, status: 'queued', createdAt: now }] }),
      ),
      loginPage({ csrf, email: evil, error: evil }),
      signupPage({ csrf, email: evil, error: evil }),
      errorPage({ status: 404, title: evil, message: evil, loggedIn: true, csrf, email: evil }),
      batchesPage(
        batches({
          email: evil,
          batches: [
            {
              ...batchExtras,
              id: 'batch_x',
              status: 'completed',
              endpoint: evil,
              model: evil,
              createdAt: now,
              total: 1,
              completed: 1,
              failed: 0,
            },
          ],
        }),
      ),
    ];
    for (const html of pages) {
      expect(html).not.toContain('<script>alert');
      expect(html).not.toContain('</script>"');
      expect(html).toContain("&lt;script>alert(1)&lt;/script>&quot;'&amp;");
    }
    // In an attribute the quote is escaped: the value cannot end early.
    expect(pages[3]).toContain('value="&lt;script>alert(1)&lt;/script>&quot;\'&amp;"');
    expect(pages[1]).toContain(`<td data-label="Name"><span>&lt;script>alert(1)&lt;/script>&quot;'&amp;</span></td>`);
    expect(pages[0]).toContain('<span class="who">&lt;script>alert(1)&lt;/script>&quot;\'&amp;</span>');
  });

  it('no dashboard source sets raw HTML: escaping is left to the renderer', () => {
    const dirs = ['views/', ''].map((d) => new URL(`../../src/adapters/http/dashboard/${d}`, import.meta.url));
    const sources = dirs.flatMap((dir) =>
      readdirSync(dir)
        .filter((f) => /\.tsx?$/.test(f))
        .map((f) => new URL(f, dir)),
    );
    expect(sources.length).toBeGreaterThan(5);
    for (const file of sources)
      expect(readFileSync(file, 'utf8'), file.pathname).not.toContain('dangerouslySetInnerHTML');
  });

  it('shows the new key exactly once, only when given, with the warning and a copy button', () => {
    const key = 'sk_fullsecretvalue0123456789abcdefghijkl';
    const withKey = keysPage(keys({ newKey: { key } }));
    expect(count(withKey, key)).toBe(1);
    expect(withKey).toMatch(new RegExp(`<input id="new-key" type="text" readonly value="${key}"`));
    expect(withKey).toContain('<button type="button" data-copy="new-key" hidden>Copy</button>');
    expect(withKey).toContain('it will not be shown again');
    const without = keysPage(keys());
    expect(without).not.toContain('new-key');
    expect(without).not.toContain('not be shown again');
    for (const html of Object.values(allPages)) expect(html).not.toContain(key);
  });

  it('every form posts with the csrf field to a dashboard path', () => {
    const token = `<input type="hidden" name="csrf" value="${csrf}"/>`;
    for (const [name, html] of Object.entries(allPages)) {
      for (const form of forms(html)) {
        expect(form, name).toMatch(/^<form (?:class="[^"]*" )?method="post" action="\/dashboard\/[^"]*"/);
        expect(count(form, token), name).toBe(1);
      }
    }
    const actions = (html: string) => forms(html).map((f) => /action="([^"]*)"/.exec(f)![1]);
    expect(actions(allPages.signup!)).toEqual(['/dashboard/signup']);
    expect(actions(allPages.login!)).toEqual(['/dashboard/login']);
    expect(actions(allPages.keys!)).toEqual([
      '/dashboard/logout',
      '/dashboard/keys/key_a1/delete',
      '/dashboard/keys/key_b2/delete',
      '/dashboard/keys',
    ]);
    expect(actions(allPages.overview!)).toEqual(['/dashboard/logout']);
    expect(actions(allPages.requests!)).toEqual(['/dashboard/logout']);
    expect(actions(allPages.batches!)).toEqual(['/dashboard/logout']);
  });

  it('signup and login ask for email and password, say the rules, and link to each other', () => {
    const signup = allPages.signup!;
    expect(signup).toMatch(/<input id="email" name="email" type="email"[^>]* required/);
    expect(signup).toMatch(/<input id="password" name="password" type="password"[^>]* minlength="12"/);
    expect(signup).toContain('At least 12 characters.');
    expect(signup).toMatch(/free plan.*at once: no card/);
    expect(signup).toContain('href="/dashboard/login"');
    expect(allPages.signupRefused).toContain('role="alert"');
    expect(allPages.signupRefused).toContain('value="x@example.org"');
    const login = allPages.login!;
    expect(login).toContain('name="email"');
    expect(login).toContain('name="password"');
    expect(login).toContain('href="/dashboard/signup"');
    expect(login).not.toContain('Too many failed logins');
    expect(allPages.loginThrottled).toContain('Wait 7 minutes and try again.');
    expect(loginPage({ csrf, throttledMinutes: 1 })).toContain('Wait 1 minute and try again.');
  });

  it('logged-out pages have no nav and no logout; logged-in ones have both', () => {
    for (const name of ['signup', 'login', 'error404', 'error429']) {
      expect(allPages[name], name).not.toContain('/dashboard/logout');
      expect(allPages[name], name).not.toContain('<nav');
    }
    for (const name of ['overview', 'keys', 'requests', 'batches', 'error403']) {
      expect(allPages[name], name).toContain('<form method="post" action="/dashboard/logout">');
      expect(allPages[name], name).toContain('<a href="/dashboard/keys"');
    }
    expect(allPages.keys).toContain('<a href="/dashboard/keys" aria-current="page">Keys</a>');
    expect(allPages.overview).toContain('<a href="/dashboard/batches">Batches</a>');
    expect(allPages.batches).toContain('<a href="/dashboard/batches" aria-current="page">Batches</a>');
    // Logged in without a token: the nav, but no logout form it could not fill.
    expect(allPages.error500).toContain('<nav');
    expect(allPages.error500).not.toContain('/dashboard/logout');
  });

  it('the overview shows plan, limits, keys used of allowed, rate state, usage and the plan table', () => {
    const html = allPages.overview!;
    expect(html).toContain('<p class="stat">Starter</p>');
    expect(html).toContain('600 submits and 6,000 polls per minute');
    expect(html).toMatch(/<p class="stat">2 <span class="muted">of 3<\/span><\/p>/);
    expect(html).toContain('598 of 600 left this minute');
    expect(html).toContain('Full again in 1 s.');
    expect(html).toContain('Full budget available.');
    expect(html).toContain('<p class="stat">1,234</p>');
    for (const plan of ['Free', 'Starter', 'Scale', 'Enterprise']) expect(html).toContain(`<th scope="row">${plan}`);
    expect(html).toContain('<tr class="current"><th scope="row">Starter<span class="muted"> (your plan)</span>');
    expect(html).toContain('<td class="num">unlimited</td><td class="num">30,000</td><td class="num">300,000</td>');
    expect(html).toContain('ask your operator');
    expect(overviewPage(overview({ plan: 'enterprise', maxKeys: null, keysUsed: 12 }))).toContain(
      '12 <span class="muted">of unlimited</span>',
    );
    // Tokens per day, a day without any shown as zeros.
    expect(html).toContain(
      '<tr><td>2026-11-23</td><td class="num">12,345</td><td class="num">678</td><td class="num">13,023</td></tr>',
    );
    expect(html).toContain(
      '<tr><td>2026-11-22</td><td class="num">0</td><td class="num">0</td><td class="num">0</td></tr>',
    );
  });

  it('the keys page lists name, prefix, created, last used or never, each delete behind a confirmation', () => {
    const html = allPages.keys!;
    expect(html).toContain(
      '<td data-label="Name"><span>ci runner</span></td><td data-label="Key"><code>sk_AbCd…</code></td>',
    );
    expect(html).toContain('<time datetime="2026-11-21T19:30:05.000Z" data-ago>2026-11-21 19:30:05.000 UTC</time>');
    expect(html).toContain('<time datetime="2026-11-23T18:30:05.000Z" data-ago>2026-11-23 18:30:05.000 UTC</time>');
    expect(html).toContain('<span class="muted">never</span>');
    expect(count(html, '<details class="confirm"><summary>Delete…</summary>')).toBe(2);
    expect(html).toMatch(
      /<details class="confirm">(?:(?!<\/details>)[\s\S])*action="\/dashboard\/keys\/key_a1\/delete"/,
    );
    expect(html).toContain('(2 of 3)');
    expect(html).not.toContain('delete one to create another');
    expect(html).not.toMatch(/<button type="submit" disabled/);
    const full = keysPage(keys({ maxKeys: 2, error: 'Your plan allows 2 API keys.' }));
    expect(full).toContain('<div class="notice error" role="alert"><p>Your plan allows 2 API keys.</p></div>');
    // At the limit the form is disabled, its reason beside the button.
    expect(full).toContain('Your plan allows 2 keys; delete one to create another');
    expect(full).toContain('<button type="submit" disabled aria-describedby="key-limit">Create key</button>');
    expect(keysPage(keys({ keys: [{ id: 'a/b?c', prefix: 'sk_1', createdAt: now }] }))).toContain(
      'action="/dashboard/keys/a%2Fb%3Fc/delete"',
    );
  });

  it('the requests page lists newest first with status in words and UTC times', () => {
    const html = allPages.requests!;
    const ids = [...html.matchAll(/<code>(req_[a-z]+)<\/code>/g)].map((m) => m[1]);
    expect(ids).toEqual(['req_new', 'req_mid', 'req_old']);
    expect(html).toContain('<span class="badge status-queued">queued</span>');
    expect(html).toContain('<span class="badge status-failed">failed</span>');
    expect(html).toContain('<time datetime="2026-11-23T19:29:05.000Z" data-ago>2026-11-23 19:29:05.000 UTC</time>');
    expect(html).toContain('<time datetime="2026-11-23T16:30:07.000Z" data-ago>2026-11-23 16:30:07.000 UTC</time>');
    expect(html).not.toContain('class="pager"');
  });

  it('the requests page links to newer and older pages by their cursors', () => {
    const middle = requestsPage(requests({ newerCursor: '3000.req_c', olderCursor: '1000.req_a' }));
    expect(middle).toContain('<a href="/dashboard/requests?after=3000.req_c">← Newer</a>');
    expect(middle).toContain('<a href="/dashboard/requests?before=1000.req_a">Older →</a>');
    expect(middle).toContain('(older ones)');
    const last = requestsPage(requests({ newerCursor: '3000.req_c' }));
    expect(last).toContain('<a href="/dashboard/requests?after=3000.req_c">← Newer</a>');
    expect(last).not.toContain('Older');
    const first = requestsPage(requests({ olderCursor: '1000.req_a' }));
    expect(first).not.toContain('Newer');
    expect(first).not.toContain('(older ones)');
    expect(first).toContain('<a href="/dashboard/requests?before=1000.req_a">Older →</a>');
  });

  it('the requests page keeps its filter in the pager and the filter links, marks the one shown, and links a line to its batch', () => {
    const lines = requestsPage(
      requests({
        show: 'batch',
        newerCursor: '3000.req_c',
        olderCursor: '1000.req_a',
        requests: [{ id: 'req_line', model: 'echo', status: 'queued', createdAt: now, batchId: 'batch_b1' }],
      }),
    );
    expect(lines).toContain('<a href="/dashboard/requests?show=batch&amp;after=3000.req_c">← Newer</a>');
    expect(lines).toContain('<a href="/dashboard/requests?show=batch&amp;before=1000.req_a">Older →</a>');
    expect(lines).toContain('<a href="/dashboard/requests?show=batch" aria-current="page">Batch lines</a>');
    expect(lines).toContain('<a href="/dashboard/requests">Interactive</a>');
    expect(lines).toContain('<a href="/dashboard/requests?show=all">All</a>');
    expect(lines).toContain('<a href="/dashboard/batches/batch_b1"><code>batch_b1</code></a>');
    expect(lines).toContain('Recent batch lines');
  });

  it('the batches page lists newest first with status, endpoint, model, progress, counts and download links', () => {
    const html = allPages.batches!;
    const ids = [...html.matchAll(/<code>(batch_[a-z]+)<\/code>/g)].map((m) => m[1]);
    expect(ids).toEqual(['batch_running', 'batch_done']);
    expect(html).toContain('<span class="badge status-in_progress">in progress</span>');
    expect(html).toContain('<span class="badge status-completed">completed</span>');
    expect(html).toContain('<code>/v1/responses</code>');
    expect(html).toContain('<td>echo</td>');
    expect(html).toContain('<time datetime="2026-11-23T17:30:05.000Z" data-ago>2026-11-23 17:30:05.000 UTC</time>');
    // Progress is the lines ended (completed and failed) of all its lines, as a bar and in words.
    expect(html).toMatch(/<progress max="10" value="10"[^>]*>100%<\/progress><span>10 of 10 \(100%\)<\/span>/);
    expect(html).toMatch(/<progress max="1200" value="300"[^>]*>25%<\/progress><span>300 of 1,200 \(25%\)<\/span>/);
    expect(html).toContain('<td class="num">9</td><td class="num">1</td>');
    expect(html).toContain('<a href="/dashboard/files/file-out" download>Output</a>');
    expect(html).toContain('<a href="/dashboard/files/file-err" download>Errors</a>');
    // A batch not ended has no files to download yet.
    const running = /<tr id="batch_running">[\s\S]*?<\/tr>/.exec(html)?.[0] ?? '';
    expect(running).not.toContain('/dashboard/files/');
    expect(html).not.toContain('class="pager"');
  });

  it('the batches page links to newer and older pages by their cursors, and says so when it has none', () => {
    const middle = batchesPage(batches({ newerCursor: '3000.batch_c', olderCursor: '1000.batch_a' }));
    expect(middle).toContain('<a href="/dashboard/batches?after=3000.batch_c">← Newer</a>');
    expect(middle).toContain('<a href="/dashboard/batches?before=1000.batch_a">Older →</a>');
    const none = allPages.batchesEmpty!;
    expect(none).toContain('No batches yet.');
    expect(none).not.toContain('<table');
    const past = batchesPage(batches({ batches: [], newerCursor: '5000.batch_e' }));
    expect(past).toContain('No batches on this page.');
    expect(past).toContain('<a href="/dashboard/batches">Back to the newest</a>');
  });

  it('the chart has 24 bars whose heights follow the counts, with the numbers as text', () => {
    const html = allPages.requests!;
    const drawn = bars(html);
    expect(drawn).toHaveLength(24);
    expect(drawn.map((b) => b.count)).toEqual(hourly);
    const max = Math.max(...hourly);
    const full = drawn.find((b) => b.count === max)!.height;
    expect(full).toBeGreaterThan(0);
    for (const b of drawn) {
      expect(b.height).toBeCloseTo((b.count / max) * full, 1);
      expect(b.y + b.height).toBeCloseTo(drawn[0]!.y + drawn[0]!.height, 5); // one baseline
    }
    for (let i = 1; i < 24; i++) {
      const [a, b] = [drawn[i - 1]!, drawn[i]!];
      expect(Math.sign(b.height - a.height)).toBe(Math.sign(b.count - a.count));
    }
    expect(html).toMatch(/<svg [^>]*role="img" aria-labelledby="chart-title chart-desc"/);
    expect(html).toContain('<title id="chart-title">Requests per hour, last 24 hours (UTC)</title>');
    const total = hourly.reduce((a, b) => a + b, 0);
    expect(html).toContain(`<desc id="chart-desc">${total} requests in the last 24 hours;`);
    // The last bar is the hour holding `now` (19:30), the first 23 hours before it.
    expect(html).toContain(`<title>19:00–20:00 UTC: ${hourly[23]} requests</title>`);
    expect(html).toContain(`<title>20:00–21:00 UTC: ${hourly[0]} requests</title>`);
    expect(html).toContain(`<td>19:00–20:00 UTC</td><td class="num">${hourly[23]}</td>`);
  });

  it('empty states: no keys, no requests, an empty later page, a chart of zeros', () => {
    const noKeys = allPages.keysEmpty!;
    expect(noKeys).toContain('You have no API keys yet.');
    expect(noKeys).not.toContain('<table');
    const none = allPages.requestsEmpty!;
    expect(none).toContain('No requests yet.');
    expect(none).toContain('No requests in the last 24 hours.');
    expect(bars(none).map((b) => b.height)).toEqual(new Array(24).fill(0));
    expect(none).not.toContain('<caption class="visually-hidden">Your recent requests');
    const past = requestsPage(requests({ requests: [], newerCursor: '5000.req_e' }));
    expect(past).toContain('No requests on this page.');
    expect(past).toContain('<a href="/dashboard/requests">Back to the newest</a>');
    expect(past).toContain('<a href="/dashboard/requests?after=5000.req_e">← Newer</a>');
  });

  it('error pages state the status, title and message, with a way back', () => {
    expect(allPages.error403).toContain('Error 403');
    expect(allPages.error403).toContain('<h1>Form expired</h1>');
    expect(allPages.error403).toContain('href="/dashboard">Back to the overview');
    expect(allPages.error429).toContain('<p>Wait 15 minutes.</p>');
    expect(allPages.error429).toContain('href="/dashboard/login">Go to the login page');
    expect(allPages.error404).toContain('<title>Not found · airs</title>');
    expect(allPages.error500).toContain('Error 500');
  });
});
