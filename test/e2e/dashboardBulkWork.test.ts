import OpenAI from 'openai';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { batchWhen, chatLines, isEnded, uploadLines } from '../support/batches.js';
import { browserWaitMs, type HeadlessBrowser, launchBrowser, screenshot } from '../support/browser.js';
import { cliJson, killChildren, runCli, submit } from '../support/processes.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * The dashboard for a team that runs bulk work (issue 42), in a real headless chromium against the real `airs serve`:
 * the Requests filter that keeps batch lines from burying interactive calls, a batch's usage, metadata, times and
 * Cancel, times to the millisecond, and the submit budget's label.
 */

const password = 'correct horse battery staple';
const exactTime = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC$/;

/** The ids of the requests the Requests page lists, in order. */
const listedIds = (page: Page) => rows(page).locator('td:first-child code').allTextContents();

/** The rows of the Requests page's list (not of the hourly chart's table). */
const rows = (page: Page) => page.locator('section[aria-labelledby="list-h"] table tbody tr');

describe('The dashboard for bulk work in a real browser (airs serve + headless chromium)', { timeout: 120_000 }, () => {
  const serve = servedAirs();
  let served: ServedAirs;
  let chromium: HeadlessBrowser;
  let client: OpenAI;
  const email = 'bulk-dash@example.com';
  const interactive: string[] = [];
  let doneBatchId: string;

  /** A logged-in page of the account (its own browser context). */
  const loggedIn = async (): Promise<Page> => {
    const context = await chromium.context();
    const page = await context.newPage();
    await page.goto(`${served.url}/dashboard/login`);
    await page.fill('#email', email);
    await page.fill('#password', password);
    await Promise.all([
      page.waitForURL(`${served.url}/dashboard`),
      page.getByRole('button', { name: 'Log in' }).click(),
    ]);
    return page;
  };

  beforeAll(async () => {
    chromium = await launchBrowser();
    served = await serve('bulk-dash');
    const accounts = await cliJson<Array<{ id: string; email: string }>>(served.box, ['accounts', 'list']);
    const id = accounts.find((account) => account.email === 'bulk-dash@example.com')?.id as string;
    const set = await runCli(served.box, ['accounts', 'set-password', id], { input: password });
    expect(set.code, set.stderr).toBe(0);
    client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    // Interactive calls on two faces, then a batch of four lines, which ends completed.
    interactive.push(String((await submit(served.url, served.key, 'echo', 'one by one')).body.request_id));
    const chat = await client.chat.completions.create({ model: 'echo', messages: [{ role: 'user', content: 'hi' }] });
    interactive.push(`req_${chat.id.slice('chatcmpl-'.length)}`);
    const fileId = await uploadLines(served.url, served.key, chatLines('echo', ['a b', 'c d e', 'f', 'g h']));
    const batch = await client.batches.create({
      input_file_id: fileId,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { team: 'search', job: 'nightly-eval' },
    });
    doneBatchId = batch.id;
    expect((await batchWhen(served.url, served.key, doneBatchId, isEnded)).status).toBe('completed');
  }, 90_000);

  afterAll(async () => {
    await chromium?.close();
    await served?.stop();
    await killChildren();
  });

  it('lists interactive requests by default without batch lines, batch lines on request each linked to its batch, and all of them under All', async () => {
    const page = await loggedIn();
    await page.goto(`${served.url}/dashboard/requests`);
    expect(await page.textContent('#list-h')).toContain('Recent interactive requests');
    expect((await listedIds(page)).sort()).toEqual([...interactive].sort());

    await Promise.all([page.waitForURL(/show=batch$/), page.getByRole('link', { name: 'Batch lines' }).click()]);
    expect(await page.getAttribute('.filter a[aria-current="page"]', 'href')).toBe('/dashboard/requests?show=batch');
    const lines = await rows(page).count();
    expect(lines).toBe(4);
    expect((await listedIds(page)).filter((id) => interactive.includes(id))).toEqual([]);
    expect(await page.locator(`table tbody a[href="/dashboard/batches/${doneBatchId}"]`).count()).toBe(4);
    await screenshot(page, 'requests-batch-lines');

    await page.getByRole('link', { name: 'All' }).click();
    await page.waitForURL(/show=all$/);
    expect(await rows(page).count()).toBe(6);

    // A line leads to its batch's page.
    await page.goto(`${served.url}/dashboard/requests?show=batch`);
    await Promise.all([
      page.waitForURL(`${served.url}/dashboard/batches/${doneBatchId}`),
      page.locator(`table tbody a[href="/dashboard/batches/${doneBatchId}"]`).first().click(),
    ]);
    expect(await page.textContent('h1')).toContain(doneBatchId);
    await page.context().close();
  });

  it('shows a batch’s request counts, token usage as the API counts it, metadata and times, and no Cancel once it has ended', async () => {
    const page = await loggedIn();
    const batch = await client.batches.retrieve(doneBatchId);
    await page.goto(`${served.url}/dashboard/batches/${doneBatchId}`);
    expect(await page.textContent('#batch-status')).toBe('completed');
    expect(await page.textContent('#request-counts')).toBe('4 completed, 0 failed, 4 in all');
    expect(batch.usage?.input_tokens).toBeGreaterThan(0);
    expect(await page.textContent('#input-tokens')).toBe(String(batch.usage?.input_tokens));
    expect(await page.textContent('#output-tokens')).toBe(String(batch.usage?.output_tokens));
    expect(await page.locator('#metadata dt').allTextContents()).toEqual(['team', 'job']);
    expect(await page.locator('#metadata dd').allTextContents()).toEqual(['search', 'nightly-eval']);
    // Created: the API's second, to the millisecond.
    const created = (await page.locator('#times time').first().getAttribute('datetime')) as string;
    expect(Math.floor(Date.parse(created) / 1000)).toBe(batch.created_at);
    expect(await page.locator('#ended-at time').count()).toBe(1);
    expect(await page.getByText('Cancel…').count()).toBe(0);
    // An ended batch's page does not reload itself.
    expect(await page.getAttribute('body', 'data-refresh-seconds')).toBeNull();

    // The list shows the same usage and metadata.
    await page.goto(`${served.url}/dashboard/batches`);
    const row = page.locator(`tr[id="${doneBatchId}"]`);
    expect(await row.locator('.tokens').textContent()).toBe(
      `${batch.usage?.input_tokens} in / ${batch.usage?.output_tokens} out`,
    );
    expect(await row.locator('dl.metadata dd').allTextContents()).toEqual(['search', 'nightly-eval']);
    await screenshot(page, 'batch-done');
    // On a phone: neither page is wider than the screen (the table scrolls inside its own box).
    await page.setViewportSize({ width: 390, height: 844 });
    for (const path of ['/dashboard/batches', `/dashboard/batches/${doneBatchId}`, '/dashboard/requests?show=batch']) {
      await page.goto(`${served.url}${path}`);
      expect(await page.evaluate(() => document.documentElement.scrollWidth), path).toBeLessThanOrEqual(390);
    }
    await page.context().close();
  });

  it('cancels a running batch with its Cancel button: the page refreshes itself until the batch ends cancelled', async () => {
    const fileId = await uploadLines(served.url, served.key, chatLines('slow', ['x', 'y', 'z']));
    const running = await client.batches.create({
      input_file_id: fileId,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    await batchWhen(served.url, served.key, running.id, (b) => b.status === 'in_progress');
    const page = await loggedIn();
    await page.goto(`${served.url}/dashboard/batches/${running.id}`);
    expect(await page.getAttribute('body', 'data-refresh-seconds')).toBe('5');
    await page.getByText('Cancel…').click();
    await Promise.all([
      page.waitForURL(`${served.url}/dashboard/batches/${running.id}?cancelled=1`),
      page.getByRole('button', { name: 'Cancel this batch' }).click(),
    ]);
    expect(await page.textContent('.notice')).toContain('Cancel asked');
    // The API sees it cancelled: the same service as POST /v1/batches/{id}/cancel.
    expect((await batchWhen(served.url, served.key, running.id, isEnded, 60_000)).status).toBe('cancelled');
    // The page reloads itself (no reload here) until it shows the end.
    await expect.poll(() => page.textContent('#batch-status'), { timeout: 15_000, interval: 500 }).toBe('cancelled');
    expect(await page.getAttribute('body', 'data-refresh-seconds')).toBeNull();
    await screenshot(page, 'batch-cancelled');
    await page.context().close();
  });

  it('shows every time to the millisecond in UTC with how long ago it was beside it', async () => {
    const page = await loggedIn();
    for (const path of ['/dashboard/requests?show=all', `/dashboard/batches/${doneBatchId}`, '/dashboard/batches']) {
      await page.goto(`${served.url}${path}`);
      const times = page.locator('time');
      expect(await times.count(), path).toBeGreaterThan(0);
      for (const text of await times.allTextContents()) expect(text, path).toMatch(exactTime);
      await expect
        .poll(() => page.locator('time + .ago').first().textContent(), { timeout: browserWaitMs })
        .toMatch(/^ \((just now|\d+ s ago|\d+ min ago)\)$/);
    }
    // The exact text and the machine form name the same millisecond.
    const first = page.locator('time').first();
    const datetime = (await first.getAttribute('datetime')) as string;
    expect(await first.textContent()).toBe(`${datetime.slice(0, 10)} ${datetime.slice(11, 23)} UTC`);
    await page.context().close();
  });

  it('labels the submit budget by what it counts on every face, chat completions and batches included', async () => {
    const page = await loggedIn();
    expect(await page.textContent('#rate-submits-label')).toBe('Submits (all faces)');
    expect(await page.textContent('#rate-polls-label')).toBe('Polls (all faces)');
    const hint = (await page.textContent('#rate-h + .hint')) ?? '';
    for (const face of ['/v1/ai', '/v1/responses', '/v1/chat/completions', '/v1/batches', '/v1/files'])
      expect(hint).toContain(face);
    expect(await page.textContent('main')).not.toContain('Submits (POST /v1/ai)');
    await page.context().close();
  });
});
