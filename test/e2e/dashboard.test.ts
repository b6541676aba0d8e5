import { readFileSync } from 'node:fs';
import type { Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { browserWaitMs, cookieHeader, type HeadlessBrowser, launchBrowser, screenshot } from '../support/browser.js';
import {
  cliJson,
  killChildren,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/**
 * The account dashboard end to end (product contract, section 9): the real `airs serve` from dist/ on 127.0.0.1 and
 * a real headless chromium clicking through its pages. Screenshots of every page go to test/e2e/artifacts/.
 */

const password = 'correct horse battery staple';
const keyPattern = /^sk_[A-Za-z0-9_-]{32,128}$/;
const testTimeoutMs = 45_000;

/** Submits a form by clicking `button` and waits until the page it leads to has loaded; returns the POST's status. */
const submitForm = async (page: Page, button: Locator, path: string): Promise<number> => {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && new URL(r.url()).pathname === path),
    page.waitForEvent('framenavigated', { predicate: (frame) => frame === page.mainFrame() }),
    button.click(),
  ]);
  await page.waitForLoadState('load');
  return response.status();
};

/** Goes to `path` and returns the final answer's status (after any redirect). */
const visit = async (page: Page, url: string, path: string): Promise<number> => {
  const response = await page.goto(`${url}${path}`, { waitUntil: 'load' });
  if (response === null) throw new Error(`no answer for ${path}`);
  return response.status();
};

/** Errors the page itself reports (a script error, an asset the CSP blocked), and any dialog it opens. */
const watch = (page: Page) => {
  const problems: string[] = [];
  const dialogs: string[] = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // A page answered 4xx on purpose is logged as "Failed to load resource" too: assets are checked by their answers.
  page.on('console', (message) => {
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource'))
      problems.push(`console: ${message.text()}`);
  });
  page.on('response', (response) => {
    if (response.request().resourceType() !== 'document' && response.status() >= 400)
      problems.push(`asset ${response.url()}: ${response.status()}`);
  });
  page.on('requestfailed', (request) => problems.push(`failed ${request.url()}: ${request.failure()?.errorText}`));
  page.on('dialog', (dialog) => {
    dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss().catch(() => undefined);
  });
  return { problems, dialogs };
};

const signUp = async (page: Page, url: string, email: string, shot?: string) => {
  expect(await visit(page, url, '/dashboard/signup')).toBe(200);
  if (shot !== undefined) await screenshot(page, shot);
  await page.fill('#email', email);
  await page.fill('#password', password);
  expect(await submitForm(page, page.getByRole('button', { name: 'Create account' }), '/dashboard/signup')).toBe(303);
  expect(page.url()).toBe(`${url}/dashboard`);
};

const logIn = async (page: Page, url: string, email: string, secret: string) => {
  expect(await visit(page, url, '/dashboard/login')).toBe(200);
  await page.fill('#email', email);
  await page.fill('#password', secret);
  return submitForm(page, page.getByRole('button', { name: 'Log in' }), '/dashboard/login');
};

/** Creates a key on the keys page; returns the POST's status. */
const createKey = async (page: Page, name: string) => {
  await page.fill('#key-name', name);
  return submitForm(page, page.getByRole('button', { name: 'Create key' }), '/dashboard/keys');
};

/** Polls GET /v1/ai until the request is completed (10 s at most); returns the last answer. */
const completed = async (url: string, key: string, reqId: string) => {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const answer = await poll(url, key, reqId);
    if (answer.body.status === 'completed' || Date.now() > deadline) return answer;
    await sleep(100);
  }
};

describe('The dashboard in a real browser (airs serve + headless chromium)', () => {
  let chromium: HeadlessBrowser;
  const boxes: Sandbox[] = [];

  /** A fresh data directory and server for one test: the login throttle counts per client address. */
  const serve = async (): Promise<{ box: Sandbox; server: ServerProcess; url: string }> => {
    const box = sandbox('airs-e2e');
    boxes.push(box);
    const server = await startServer(box);
    return { box, server, url: server.url };
  };

  beforeAll(async () => {
    chromium = await launchBrowser();
  }, 30_000);
  afterEach(async () => {
    await killChildren();
  });
  afterAll(async () => {
    await chromium?.close();
    await killChildren();
    for (const box of boxes) box.remove();
  });

  it(
    'signs up, creates a key shown once, uses it, sees the request, is refused a second key, deletes it, logs out',
    async () => {
      const { url } = await serve();
      const context = await chromium.context();
      await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
      const page = await context.newPage();
      const { problems, dialogs } = watch(page);

      // Sign up: the free plan at once, logged in on the overview.
      await signUp(page, url, 'walk@example.com', 'signup');
      await expect.poll(() => page.textContent('h1'), { timeout: browserWaitMs }).toBe('Overview');
      expect(await page.textContent('#plan-h + .stat')).toBe('Free');
      expect(await page.textContent('header')).toContain('walk@example.com');
      await screenshot(page, 'overview');

      // Keys: create one with a name; the answer shows it in full, with a working Copy button.
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Keys' }).click();
      await page.waitForURL(`${url}/dashboard/keys`);
      expect(await page.textContent('main')).toContain('You have no API keys yet.');
      expect(await createKey(page, 'ci runner')).toBe(201);
      const key = await page.inputValue('#new-key');
      expect(key).toMatch(keyPattern);
      expect(await page.textContent('#new-key-h')).toBe('Your new API key “ci runner”');
      await screenshot(page, 'keys-new-key');
      const copy = page.locator('button[data-copy="new-key"]');
      await copy.click(); // hidden unless the page's script ran (under the strict CSP)
      await expect.poll(() => page.textContent('#new-key-status'), { timeout: browserWaitMs }).toBe('Copied.');
      expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(key);
      // On a phone: nothing wider than the screen (wide tables scroll inside their own box).
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await screenshot(page, 'keys-new-key-phone');
      await page.setViewportSize({ width: 1280, height: 800 });

      // The key works on the API.
      const submitted = await submit(url, key, 'echo', 'Hello from the dashboard');
      expect(submitted.status).toBe(202);
      const reqId = submitted.body.request_id as string;
      expect((await completed(url, key, reqId)).body).toMatchObject({
        status: 'completed',
        response: 'Hello from the dashboard',
      });

      // The request is on the Requests page with its status.
      expect(await visit(page, url, '/dashboard/requests')).toBe(200);
      const row = page.locator('tbody tr', { hasText: reqId });
      expect(await row.count()).toBe(1);
      expect(await row.locator('.badge').textContent()).toBe('completed');
      expect(await row.textContent()).toContain('echo');
      await screenshot(page, 'requests');

      // Reloaded, the keys page shows the key's prefix only, never the key again, and says the plan is full.
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      expect(await page.locator('#new-key').count()).toBe(0);
      expect(await page.content()).not.toContain(key);
      const keyRow = page.locator('tbody tr', { hasText: 'ci runner' });
      expect(await keyRow.locator('td code').first().textContent()).toBe(`${key.slice(0, 11)}…`);
      // Last used: the key's use is saved with the committer's next batch, within about a second.
      await expect
        .poll(
          async () => {
            await visit(page, url, '/dashboard/keys');
            return (await keyRow.locator('td').nth(3).textContent()) ?? '';
          },
          { timeout: 5_000, interval: 250 },
        )
        .toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d/);
      // The plan is full: Create key is disabled, its reason beside it.
      const create = page.getByRole('button', { name: 'Create key' });
      expect(await create.isDisabled()).toBe(true);
      expect(await page.textContent('#key-limit')).toContain('Your plan allows 1 key; delete one to create another');
      await screenshot(page, 'keys-after-reload');

      // A tab that still shows an enabled button (a stale page) is refused by the server with a clear message.
      await page.evaluate(() => {
        for (const field of document.querySelectorAll('form[action="/dashboard/keys"] [disabled]'))
          field.removeAttribute('disabled');
      });
      expect(await createKey(page, 'second')).toBe(400);
      expect(await page.locator('#new-key').count()).toBe(0);
      const refusal = (await page.getByRole('alert').textContent()) ?? '';
      expect(refusal).toContain('Your free plan allows 1 API key and you have 1');
      await screenshot(page, 'keys-second-key-refused');

      // Delete it behind the confirmation: the very next API call with it is refused.
      await page.getByText('Delete…').click();
      const confirm = page.getByRole('button', { name: 'Delete this key' });
      expect(await confirm.isVisible()).toBe(true);
      const keyId = (await page.locator('tbody tr').first().getAttribute('id'))?.replace(/^key-/, '') ?? '';
      expect(await submitForm(page, confirm, `/dashboard/keys/${keyId}/delete`)).toBe(303);
      expect(page.url()).toBe(`${url}/dashboard/keys?deleted=${keyId}`);
      expect(await page.getByRole('status').first().textContent()).toBe(
        `Key ${key.slice(0, 11)}… (ci runner) was deleted. API calls with it are refused from now on.`,
      );
      expect(await page.textContent('main')).toContain('You have no API keys yet.');
      await screenshot(page, 'keys-deleted');
      expect((await submit(url, key, 'echo', 'after delete')).status).toBe(401);

      // Log out: every page but signup and login leads to the login page.
      expect(await submitForm(page, page.getByRole('button', { name: 'Log out' }), '/dashboard/logout')).toBe(303);
      expect(page.url()).toBe(`${url}/dashboard/login`);
      await screenshot(page, 'login');
      for (const path of ['/dashboard', '/dashboard/keys', '/dashboard/requests']) {
        const response = await page.goto(`${url}${path}`);
        expect(response?.request().redirectedFrom()?.url(), path).toBe(`${url}${path}`);
        expect(page.url(), path).toBe(`${url}/dashboard/login`);
        expect(await page.textContent('h1')).toBe('Log in');
      }

      expect(problems).toEqual([]);
      expect(dialogs).toEqual([]);
      await context.close();
    },
    testTimeoutMs,
  );

  it(
    'answers a forged form (no or a wrong CSRF token) with 403 and creates no key; an unknown page with 404',
    async () => {
      const { url } = await serve();
      const context = await chromium.context();
      const page = await context.newPage();
      const { problems } = watch(page);
      await signUp(page, url, 'forged@example.com');

      // Another site's form would carry the session cookie but cannot know the token.
      const cookie = await cookieHeader(context, `${url}/dashboard/keys`);
      expect(cookie).toContain('airs_session=');
      for (const body of [
        'name=forged',
        'name=forged&csrf=',
        'name=forged&csrf=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      ]) {
        const forged = await fetch(`${url}/dashboard/keys`, {
          method: 'POST',
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          body,
          redirect: 'manual',
        });
        expect(forged.status, body).toBe(403);
        expect(await forged.text()).toContain('This form has expired');
      }

      // The same from the browser, with the form's token changed: the 403 page.
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      await page.evaluate(() => {
        const field = document.querySelector<HTMLInputElement>('form[action="/dashboard/keys"] input[name="csrf"]');
        if (field !== null) field.value = 'not-the-token';
      });
      expect(await createKey(page, 'forged in the page')).toBe(403);
      expect(await page.textContent('h1')).toBe('This form has expired');
      await screenshot(page, 'forbidden-403');

      // No key was made.
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      expect(await page.textContent('main')).toContain('You have no API keys yet.');
      expect(await page.textContent('main')).not.toContain('forged');

      expect(await visit(page, url, '/dashboard/no-such-page')).toBe(404);
      expect(await page.textContent('h1')).toBe('Not found');
      await screenshot(page, 'not-found-404');

      expect(problems).toEqual([]);
      await context.close();
    },
    testTimeoutMs,
  );

  it(
    'throttles failed logins: the sixth attempt gets the 429 page, even with the right password',
    async () => {
      const { url } = await serve();
      const context = await chromium.context();
      const page = await context.newPage();
      await signUp(page, url, 'throttled@example.com');
      expect(await submitForm(page, page.getByRole('button', { name: 'Log out' }), '/dashboard/logout')).toBe(303);

      for (let attempt = 1; attempt <= 5; attempt++)
        expect(await logIn(page, url, 'throttled@example.com', `wrong password ${attempt}`), `attempt ${attempt}`).toBe(
          401,
        );
      expect(await page.getByRole('alert').count()).toBe(1);
      expect(await logIn(page, url, 'throttled@example.com', 'wrong password 6')).toBe(429);
      expect(await page.textContent('main')).toContain('Too many failed logins.');
      expect(await page.textContent('main')).toMatch(/Wait \d+ minutes? and try again\./);
      await screenshot(page, 'login-throttled-429');
      expect(await logIn(page, url, 'throttled@example.com', password)).toBe(429);
      await context.close();
    },
    testTimeoutMs,
  );

  it(
    'logs in a CLI-created account once the operator sets its password, and shows a key named <script> as text',
    async () => {
      const box = sandbox('airs-e2e-cli');
      boxes.push(box);
      const account = await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', 'ops@example.com']);
      const short = await runCli(box, ['accounts', 'set-password', account.id], { input: 'too short' });
      expect(short.code).not.toBe(0);
      const set = await runCli(box, ['accounts', 'set-password', account.id], { input: `${password}\n` });
      expect(set.code, set.stderr).toBe(0);
      const server = await startServer(box);
      const url = server.url;

      const context = await chromium.context();
      const page = await context.newPage();
      const { problems, dialogs } = watch(page);
      expect(await logIn(page, url, 'ops@example.com', password)).toBe(303);
      expect(page.url()).toBe(`${url}/dashboard`);

      const name = '<script>alert(1)</script>';
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      expect(await createKey(page, name)).toBe(201);
      expect(await page.textContent('#new-key-h')).toBe(`Your new API key “${name}”`);
      const key = await page.inputValue('#new-key');
      expect(key).toMatch(keyPattern);
      expect((await submit(url, key, 'echo', 'from a CLI-made account')).status).toBe(202);
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      expect(await page.locator('tbody tr td').first().textContent()).toBe(name);
      expect(await page.textContent('main')).toContain(name);
      expect(await page.content()).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
      // The only script on the page is the dashboard's own asset.
      expect(await page.locator('script').count()).toBe(1);
      await page.getByText('Delete…').click();
      expect(await page.locator('details.confirm p').textContent()).toContain(`(${name})`);
      await sleep(200); // a dialog would have fired by now
      expect(dialogs).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    },
    testTimeoutMs,
  );
  it(
    'shows a batch made with a key from the Keys page on the Batches page, and downloads its output file',
    async () => {
      const { url } = await serve();
      const context = await chromium.context();
      const page = await context.newPage();
      const { problems, dialogs } = watch(page);
      await signUp(page, url, 'batches@example.com');
      expect(await visit(page, url, '/dashboard/keys')).toBe(200);
      expect(await createKey(page, 'batch jobs')).toBe(201);
      const key = await page.inputValue('#new-key');
      const fileId = await uploadLines(url, key, chatLines('echo', ['one', 'two']));
      const { id } = await createBatch(url, key, fileId);
      const ended = await batchWhen(url, key, id, isEnded);
      expect(ended.status).toBe('completed');

      // From the nav to the Batches page: the batch, done, with its output file to download and no error file.
      await page.getByRole('navigation', { name: 'Dashboard' }).getByRole('link', { name: 'Batches' }).click();
      await page.waitForURL(`${url}/dashboard/batches`);
      expect(await page.textContent('h1')).toBe('Batches');
      const row = page.locator('tbody tr', { hasText: id });
      expect(await row.count()).toBe(1);
      expect(await row.locator('.badge').textContent()).toBe('completed');
      expect(await row.locator('.progress span').textContent()).toBe('2 of 2 (100%)');
      expect(await row.getByRole('link', { name: 'Errors' }).count()).toBe(0);
      await screenshot(page, 'batches');

      const [download] = await Promise.all([
        page.waitForEvent('download'),
        row.getByRole('link', { name: 'Output' }).click(),
      ]);
      const saved = readFileSync(await download.path());
      expect(saved.equals(await fileContent(url, key, ended.output_file_id as string))).toBe(true);
      expect(saved.toString()).toContain('"custom_id":"c1"');

      // On a phone: nothing wider than the screen (the table scrolls inside its own box).
      await page.setViewportSize({ width: 390, height: 844 });
      expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
      await screenshot(page, 'batches-phone');

      expect(problems).toEqual([]);
      expect(dialogs).toEqual([]);
      await context.close();
    },
    testTimeoutMs,
  );
});
