import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import type { StoredEvent } from '../../src/domain/events.js';
import { systemClock } from '../../src/ports/Clock.js';
import { promptAffineTo } from '../support/affinePrompt.js';
import { sessionBrowser } from '../support/dashboardForm.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { unusedPort } from '../support/ports.js';
import { submit } from '../support/submit.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';

const lineRequestIdOf = (batchId: string) => lineRequestId(batchId, 1);

/** `GET /dashboard/requests/:id`: one of the account's own requests, its texts bounded, its history from the log. */

let app: TestApp;
afterEach(() => app.stop());

/** A visitor signed up with one key of its own. */
const signedUp = async (email: string) => {
  const visitor = sessionBrowser(app);
  await visitor.signup(email);
  const accountId = (await app.store.reads.accountIdByEmail(email)) as string;
  const key = (await Effect.runPromise(app.accounts.createKey(accountId))).key;
  return { visitor, key };
};

const completed = (key: string, reqId: string) =>
  eventually(async () => {
    const body = (await (await app.call('GET', `/v1/ai?req_id=${reqId}`, { key })).json()) as { status: string };
    return body.status === 'completed' ? body : undefined;
  });

/** The text of the rows of the page's events table, tags dropped. */
const eventRows = (html: string) =>
  [
    ...(/<table id="events">[\s\S]*?<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? '').matchAll(
      /<tr>([\s\S]*?)<\/tr>/g,
    ),
  ].map((row) =>
    (row[1] as string)
      .replace(/<[^>]+>/g, ' ')
      .replace(/\s+/g, ' ')
      .trim(),
  );

describe('The dashboard request page', () => {
  it('shows an own request’s answer, usage, times and events from the log, opened from the requests table', async () => {
    app = await startTestApp({ clock: systemClock });
    const { visitor, key } = await signedUp('detail@example.com');
    const reqId = await submit(app, key, { model: 'echo', prompt: 'Hello <b>there</b> & you' });
    await completed(key, reqId);

    const list = await visitor.get('/dashboard/requests');
    expect(list.text).toContain(`<a href="/dashboard/requests/${reqId}"><code>${reqId}</code></a>`);
    const page = await visitor.get(`/dashboard/requests/${reqId}`);
    expect(page.status).toBe(200);
    const html = page.text;
    expect(html).toContain(`<span class="badge status-completed" id="request-status">completed</span>`);
    // The answer, as text: the renderer escapes it.
    expect(html).toContain('<pre class="text-box" id="answer">Hello &lt;b>there&lt;/b> &amp; you</pre>');
    expect(html).not.toContain('<b>there</b>');
    // Usage: echo counts words; the prompt is gone once the request settled, its size kept.
    expect(html).toMatch(/<dt>Input tokens<\/dt><dd>4<\/dd><dt>Output tokens<\/dt><dd>4<\/dd>/);
    expect(html).toContain('<p class="muted" id="prompt-gone">');
    expect(html).toContain('24 characters');
    // Times: created, started, completed and expires, each as a <time> to the millisecond.
    const state = (await app.store.reads.request(reqId))!;
    const stamp = (ms: number) => {
      const iso = new Date(ms).toISOString();
      return `<time dateTime="${iso}" data-ago>${iso.slice(0, 10)} ${iso.slice(11, 23)} UTC</time>`;
    };
    for (const [label, at] of [
      ['Created', state.context.createdAt],
      ['Started', state.context.startedAt!],
      ['Completed', state.context.completedAt!],
      ['Expires', state.context.expiresAt],
    ] as const)
      expect(html.toLowerCase(), label).toContain(`<dt>${label.toLowerCase()}</dt><dd>${stamp(at).toLowerCase()}`);
    // Its events from the log, in order, with the state each reached.
    const rows = eventRows(html);
    expect(rows).toHaveLength(3);
    expect(rows[0]).toMatch(/Submitted and queued waiting RequestQueued$/);
    expect(rows[1]).toMatch(/Attempt 1 started processing RequestProcessingStarted$/);
    expect(rows[2]).toMatch(/Answered completed RequestCompleted$/);
  });

  it('shows a queued request’s prompt while it is kept, and says it is not answered yet', async () => {
    app = await startTestApp({ clock: systemClock });
    const { visitor, key } = await signedUp('queued@example.com');
    const reqId = await submit(app, key, { model: 'echo-slow', prompt: 'Still <i>thinking</i>' });
    const page = await visitor.get(`/dashboard/requests/${reqId}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<pre class="text-box" id="prompt">Still &lt;i>thinking&lt;/i></pre>');
    expect(page.text).toContain('Not answered yet.');
    expect(page.text).toMatch(/id="request-status">(queued|processing)</);
  });

  it('cuts a long answer to 10,000 characters, saying how long it is', async () => {
    app = await startTestApp({ clock: systemClock });
    const { visitor, key } = await signedUp('long@example.com');
    const prompt = `${'x'.repeat(12_000)}😀${'y'.repeat(343)}`;
    const reqId = await submit(app, key, { model: 'echo', prompt: prompt });
    await completed(key, reqId);
    const html = (await visitor.get(`/dashboard/requests/${reqId}`)).text;
    const shown = /<pre class="text-box" id="answer">([^<]*)<\/pre>/.exec(html)?.[1] as string;
    expect(shown).toBe('x'.repeat(10_000));
    expect(html).toContain('Showing the first 10,000 of 12,345 characters.');
  });

  it('answers another account’s request, an unknown id and a malformed one with the same 404 page', async () => {
    app = await startTestApp();
    const other = await app.account();
    const theirs = await submit(app, other.key, { model: 'echo', prompt: 'not yours' });
    const { visitor, key } = await signedUp('nosy@example.com');
    const mine = await submit(app, key, { model: 'echo', prompt: 'mine' });
    expect((await visitor.get(`/dashboard/requests/${mine}`)).status).toBe(200);
    const unknown = `${mine.slice(0, -4)}${mine.endsWith('AAAA') ? 'BBBB' : 'AAAA'}`;
    const answers = await Promise.all(
      [theirs, unknown, 'req_x', '..%2F..%2Fetc'].map((id) => visitor.get(`/dashboard/requests/${id}`)),
    );
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(answer.text).toContain('There is nothing at this address.');
      expect(answer.text).not.toContain('not yours');
    }
    expect(answers[0]!.text).toBe(answers[1]!.text);
    // Without a session: to the login page, as every page.
    const anonymous = await sessionBrowser(app).get(`/dashboard/requests/${mine}`);
    expect(anonymous.status).toBe(303);
    expect(anonymous.headers.get('location')).toBe('/dashboard/login');
  });

  it('reads the log only near the request: an old request’s page stops once its history is whole', async () => {
    app = await startTestApp({ clock: systemClock });
    const { visitor, key } = await signedUp('bounded@example.com');
    const first = await submit(app, key, { model: 'echo', prompt: 'the first' });
    await completed(key, first);
    for (let i = 0; i < 40; i++) await completed(key, await submit(app, key, { model: 'echo', prompt: `later ${i}` }));
    const lastSeq = await app.store.reads.lastSeq();
    expect(lastSeq).toBeGreaterThan(120);
    // Count the events the page's reads take from the log (an observer around the real read).
    let read = 0;
    const reads = app.store.reads;
    const events = reads.events.bind(reads);
    reads.events = (fromSeq?: number) =>
      (async function* () {
        for await (const event of events(fromSeq)) {
          read++;
          yield event as StoredEvent;
        }
      })();
    const page = await visitor.get(`/dashboard/requests/${first}`);
    expect(eventRows(page.text)).toHaveLength(3);
    expect(read).toBeLessThan(40);
  });
  it('says why a request failed for good in the words its caller was given, never the upstream’s address', async () => {
    const upstream = await startFakeOpenAi();
    try {
      app = await startTestApp({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'gpt',
              provider: 'openai',
              baseUrl: upstream.baseUrl,
              upstreamModel: 'm',
              timeoutMs: 5_000,
              maxRetries: 0,
            },
          ],
        },
      });
      const { visitor, key } = await signedUp('refused@example.com');
      const reqId = await submit(app, key, { model: 'gpt', prompt: 'answer 404' });
      await eventually(async () => ((await app.store.reads.request(reqId))?.status === 'failed' ? true : undefined));
      const html = (await visitor.get(`/dashboard/requests/${reqId}`)).text;
      expect(html).toContain("Processing failed after 1 attempt: the model's upstream refused the request (404).");
      expect(html).not.toContain(upstream.baseUrl);
      expect(html).not.toContain('127.0.0.1');
    } finally {
      await upstream.close();
    }
  });

  it("shows a waiting batch line's start, read from the batch's input file (never copied into its request), bounded, with where it lies", async () => {
    app = await startTestApp({
      clock: systemClock,
      config: { models: [{ id: 'stuck', provider: 'echo', delayMs: 600_000, timeoutMs: 600_000 }] },
    });
    const { visitor, key } = await signedUp('lines@example.com');
    const content = `<b>${'y'.repeat(30_000)}</b>`;
    const line = JSON.stringify({
      custom_id: 'first',
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'stuck', messages: [{ role: 'user', content }] },
    });
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${line}\n`]), 'lines.jsonl');
    const uploaded = await app.http.request('http://airs.test/v1/files', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    const fileId = ((await uploaded.json()) as { id: string }).id;
    const created = await app.call('POST', '/v1/batches', {
      key,
      body: { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' },
    });
    const batchId = ((await created.json()) as { id: string }).id;
    const reqId = await eventually(async () => {
      const view = await app.store.reads.batch(batchId);
      return view !== undefined && view.counts.queued === 1 ? lineRequestIdOf(batchId) : undefined;
    });
    // Its request keeps where the line lies, not its 30,000 characters.
    const stored = await app.store.reads.requestWithText(reqId);
    expect(stored?.state.context.input).toBe('line');
    expect(stored?.text?.length).toBeLessThan(200);
    const html = (await visitor.get(`/dashboard/requests/${reqId}`)).text;
    expect(html).toContain('<h2 id="input-h">Batch line (JSON)</h2>');
    expect(html).toContain(
      `Line 1 of the batch's input file <code>${fileId}</code> (${line.length.toLocaleString('en-US')} bytes)`,
    );
    // The line's start as text (escaped), bounded as any text is.
    expect(html).toContain('<pre class="text-box" id="prompt">{&quot;custom_id&quot;:&quot;first&quot;');
    expect(html).not.toContain('<b>yyy');
    expect(html).toContain('Showing the first 10,000 characters of the line.');
  });

  it('names the upstream that served each attempt, the move off an upstream that refused the connection, and the time to first token', async () => {
    const live = await startFakeOpenAi({ delayMs: 120 });
    const dead = `http://127.0.0.1:${await unusedPort()}/v1`;
    try {
      app = await startTestApp({
        clock: systemClock,
        config: {
          models: [
            {
              id: 'fleet',
              provider: 'openai',
              upstreamModel: 'm',
              timeoutMs: 5_000,
              upstreams: [
                { name: 'gone', baseUrl: dead, maxConcurrency: 4 },
                { name: 'live', baseUrl: live.baseUrl, maxConcurrency: 4 },
              ],
            },
          ],
        },
      });
      const { visitor, key } = await signedUp('fleet@example.com');
      const reqId = await submit(app, key, { model: 'fleet', prompt: promptAffineTo('gone', ['gone', 'live']) });
      await completed(key, reqId);
      const html = (await visitor.get(`/dashboard/requests/${reqId}`)).text;
      expect(html).toMatch(/<dt>Upstream<\/dt><dd id="served-by"><code>live<\/code><\/dd>/);
      const firstToken = Number(/<dd id="first-token">([\d,]+) ms<\/dd>/.exec(html)?.[1]?.replaceAll(',', ''));
      // The live upstream waits 120 ms before its first byte.
      expect(firstToken).toBeGreaterThanOrEqual(110);
      const rows = eventRows(html);
      // The prompt's affinity lands on the dead upstream: the attempt is moved off it, not spent.
      expect(rows.slice(1, 3)).toEqual([
        expect.stringMatching(/ Attempt 1 started on upstream gone processing RequestProcessingStarted$/),
        expect.stringMatching(
          / Attempt 1 moved from upstream gone to live \(its upstream failed\) processing RequestUpstreamChanged$/,
        ),
      ]);
      expect(rows.at(-1)).toMatch(
        new RegExp(
          `Answered \\(first token after ${firstToken.toLocaleString('en-US')} ms\\) completed RequestCompleted$`,
        ),
      );
      expect(html).not.toContain(live.baseUrl);
    } finally {
      await live.close();
    }
  });
});
