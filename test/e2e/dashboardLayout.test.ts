import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HeadlessBrowser, launchBrowser, screenshot } from '../support/browser.js';
import {
  createAccountWithKey,
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
 * The dashboard's pages at a phone's width (390 px) and a laptop's (1280 px), in a real headless chromium against the
 * real `airs serve`: nothing wider than the screen but inside a scroll box, the chart's labels apart and large enough
 * to read, the requests table's links and statuses on screen. Screenshots go to test/e2e/artifacts/layout-*.png.
 */

const password = 'correct horse battery staple';
const widths = [390, 1280] as const;

/** Elements that reach past the viewport's right edge and are not inside a box that scrolls sideways. */
const overflowing = (page: Page) =>
  page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const scrolls = (element: Element | null): boolean => {
      for (let at = element; at !== null && at !== document.body; at = at.parentElement) {
        const overflowX = getComputedStyle(at).overflowX;
        if (overflowX === 'auto' || overflowX === 'scroll') return true;
      }
      return false;
    };
    const found: string[] = [];
    for (const element of Array.from(document.body.querySelectorAll('*'))) {
      const box = element.getBoundingClientRect();
      if (box.width === 0 || box.right <= width + 1 || scrolls(element.parentElement)) continue;
      found.push(`${element.tagName.toLowerCase()}.${element.className} right=${Math.round(box.right)}`);
    }
    return { found, scrollWidth: document.documentElement.scrollWidth, width };
  });

/** The boxes of the hourly chart's labels as shown (the chart drawn for this width). */
const chartLabels = (page: Page) =>
  page.evaluate(() =>
    Array.from(document.querySelectorAll('.chart svg text'))
      .map((text) => {
        const box = text.getBoundingClientRect();
        return { text: text.textContent ?? '', left: box.left, right: box.right, top: box.top, bottom: box.bottom };
      })
      .filter((box) => box.right > box.left),
  );

/** Tries `check` until it answers, for at most 10 s (a delivery attempt is the server's, in its own time). */
const eventuallyOnPage = async <A>(check: () => Promise<A | undefined>): Promise<A | undefined> => {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const value = await check();
    if (value !== undefined || Date.now() > deadline) return value;
    await sleep(200);
  }
};

const overlap = (a: { left: number; right: number; top: number; bottom: number }, b: typeof a) =>
  a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

describe('The dashboard at 390 and 1280 px (airs serve + headless chromium)', () => {
  let chromium: HeadlessBrowser;
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  let reqId: string;

  beforeAll(async () => {
    box = sandbox('airs-e2e-layout');
    // Webhook endpoints on 127.0.0.1 over http (the Webhooks pages' rows), as the issue's tests allow.
    box.writeConfig({ webhooks: { allowHttp: true, allowPrivateNetworks: true } });
    const account = await createAccountWithKey(box, 'narrow@example.com');
    const set = await runCli(box, ['accounts', 'set-password', account.accountId], { input: `${password}\n` });
    expect(set.code, set.stderr).toBe(0);
    key = account.key;
    server = await startServer(box);
    chromium = await launchBrowser();
    // A few requests for the table and the chart; one with a long prompt, whose answer (echo's) the page cuts short.
    for (const prompt of ['short one', 'another', `${'long words '.repeat(1_500)}end`]) {
      const submitted = await submit(server.url, key, 'echo', prompt);
      expect(submitted.status).toBe(202);
      reqId = submitted.body.request_id as string;
    }
    const deadline = Date.now() + 10_000;
    while ((await poll(server.url, key, reqId)).body.status !== 'completed' && Date.now() < deadline) await sleep(100);
  }, 60_000);
  afterAll(async () => {
    await chromium?.close();
    await killChildren();
    box?.remove();
  });

  for (const width of widths)
    it(`lays out the home, requests, request and keys pages within ${width} px, the chart's labels readable`, async () => {
      const context = await chromium.context({ viewport: { width, height: 844 } });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));

      // Home: the two ways on are buttons with room between them.
      await page.goto(`${server.url}/`);
      const login = await page.getByRole('link', { name: 'Log in' }).boundingBox();
      const signup = await page.getByRole('link', { name: 'Create an account' }).boundingBox();
      if (login === null || signup === null) throw new Error('the home page lacks its links');
      for (const button of [login, signup]) expect(button.height).toBeGreaterThanOrEqual(36);
      const apart = Math.max(signup.x - (login.x + login.width), signup.y - (login.y + login.height));
      expect(apart).toBeGreaterThanOrEqual(8);
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-home-${width}`);

      await page.goto(`${server.url}/dashboard/login`);
      await page.fill('#email', 'narrow@example.com');
      await page.fill('#password', password);
      await Promise.all([
        page.waitForURL(`${server.url}/dashboard`),
        page.getByRole('button', { name: 'Log in' }).click(),
      ]);

      // Requests: the table's links and statuses on screen (not cut off), the chart's labels apart and readable.
      await page.goto(`${server.url}/dashboard/requests`);
      const layout = await overflowing(page);
      expect(layout.found).toEqual([]);
      expect(layout.scrollWidth).toBeLessThanOrEqual(width);
      const rows = page.locator('tbody tr', { has: page.locator('a[href^="/dashboard/requests/"]') });
      expect(await rows.count()).toBe(3);
      // Every cell of a row in sight: a table cut off by its scroll box (to scroll sideways) fails here.
      const cells = await rows.first().evaluate((row) => {
        const shown = (row.closest('.table-wrap') ?? document.documentElement).getBoundingClientRect();
        return Array.from(row.querySelectorAll('td'))
          .map((cell) => cell.getBoundingClientRect())
          .filter((box) => box.width > 0)
          .map((box) => ({
            left: box.left,
            right: box.right,
            from: shown.left,
            to: Math.min(shown.right, innerWidth),
          }));
      });
      expect(cells.length).toBeGreaterThanOrEqual(4);
      for (const cell of cells)
        expect(cell.left >= cell.from - 1 && cell.right <= cell.to + 1, JSON.stringify(cell)).toBe(true);
      const labels = await chartLabels(page);
      expect(labels.map((label) => label.text)).toContain('now');
      expect(labels.length).toBeGreaterThanOrEqual(5);
      for (const label of labels) expect(label.bottom - label.top, `label ${label.text}`).toBeGreaterThanOrEqual(10);
      for (const [i, a] of labels.entries())
        for (const b of labels.slice(i + 1)) expect(overlap(a, b), JSON.stringify([a, b])).toBe(false);
      await screenshot(page, `layout-requests-${width}`);

      // A request's page, opened from the table: cut short with a note, within the width.
      await Promise.all([
        page.waitForURL(`${server.url}/dashboard/requests/${reqId}`),
        page.locator(`a[href="/dashboard/requests/${reqId}"]`).click(),
      ]);
      expect(await page.textContent('#request-status')).toBe('completed');
      expect(await page.textContent('main')).toContain('Showing the first 10,000 of 16,503 characters.');
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-request-${width}`);

      // Keys: at the free plan's one key, the create button is disabled with its reason beside it.
      await page.goto(`${server.url}/dashboard/keys`);
      expect(await page.getByRole('button', { name: 'Create key' }).isDisabled()).toBe(true);
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-keys-${width}`);
      // Its delete, opened: the confirmation step fits too.
      await page.getByText('Delete…').click();
      expect(await page.getByRole('button', { name: 'Delete this key' }).isVisible()).toBe(true);
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-keys-confirm-${width}`);

      expect(problems).toEqual([]);
      await context.close();
    }, 45_000);

  // After the pages above (which count the account's requests): the request made here is the webhook's.
  for (const width of widths)
    it(`lays out the webhooks pages within ${width} px: the secret once, the list with its confirm steps open, a delivery log`, async () => {
      const context = await chromium.context({ viewport: { width, height: 844 } });
      const page = await context.newPage();
      const problems: string[] = [];
      page.on('pageerror', (error) => problems.push(error.message));
      await page.goto(`${server.url}/dashboard/login`);
      await page.fill('#email', 'narrow@example.com');
      await page.fill('#password', password);
      await Promise.all([
        page.waitForURL(`${server.url}/dashboard`),
        page.getByRole('button', { name: 'Log in' }).click(),
      ]);

      // An endpoint added through the form at the first width (the free plan allows one), its secret shown once.
      await page.goto(`${server.url}/dashboard/webhooks`);
      if (width === widths[0]) {
        // A port nothing listens on: each attempt fails at once, with a long error for the log to show.
        await page.fill('#webhook-url', 'http://127.0.0.1:9/a/rather/long/path/to/receive/airs/webhooks/on?team=ops');
        await page.getByLabel('request.completed').check();
        await Promise.all([page.waitForLoadState(), page.getByRole('button', { name: 'Add endpoint' }).click()]);
        expect(await page.inputValue('#new-secret')).toMatch(/^whsec_/);
        expect((await overflowing(page)).found).toEqual([]);
        await screenshot(page, `layout-webhooks-secret-${width}`);
        const submitted = await submit(server.url, key, 'echo', 'for the webhook');
        expect(submitted.status).toBe(202);
        await page.goto(`${server.url}/dashboard/webhooks`);
      }
      expect(await page.getByRole('button', { name: 'Add endpoint' }).isDisabled()).toBe(true);
      await page.getByText('Rotate secret…').click();
      await page.getByText('Remove…').click();
      expect(await page.getByRole('button', { name: 'Remove this endpoint' }).isVisible()).toBe(true);
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-webhooks-${width}`);
      await Promise.all([
        page.waitForURL(/\/dashboard\/webhooks\/whep_/),
        page.locator('a[href^="/dashboard/webhooks/whep_"]').first().click(),
      ]);
      // The request's delivery, listed from its ending on (its attempts' outcomes follow as the sender makes them).
      const listed = await eventuallyOnPage(async () => {
        await page.reload();
        return (await page.locator('tbody tr[id^="wh_"]').count()) > 0 ? true : undefined;
      });
      expect(listed).toBe(true);
      expect((await overflowing(page)).found).toEqual([]);
      await screenshot(page, `layout-webhook-log-${width}`);

      expect(problems).toEqual([]);
      await context.close();
    }, 45_000);
});
