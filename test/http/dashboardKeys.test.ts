import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { sessionBrowser } from '../support/dashboardForm.js';
import { startTestApp, type TestApp } from '../support/testApp.js';

/** The keys page at the plan's key limit, and deleting a key: a confirmation before, a notice after. */

let app: TestApp;
afterEach(() => app.stop());

const createButton = (html: string) => /<button type="submit"[^>]*>Create key<\/button>/.exec(html)?.[0] ?? '';

describe('The dashboard keys page', () => {
  it('disables Create key at the plan’s key limit with the reason beside it, and still refuses a post', async () => {
    app = await startTestApp();
    const visitor = sessionBrowser(app);
    await visitor.signup('limit@example.com');
    const accountId = (await app.store.reads.accountIdByEmail('limit@example.com')) as string;
    const empty = await visitor.get('/dashboard/keys');
    expect(createButton(empty.text)).toBe('<button type="submit">Create key</button>');
    expect(empty.text).not.toContain('delete one to create another');
    expect((await visitor.post('/dashboard/keys', { name: 'one', csrf: visitor.csrfOf(empty.text) })).status).toBe(201);

    // The free plan allows one key: the button is disabled and names why, the name field too.
    const full = await visitor.get('/dashboard/keys');
    expect(createButton(full.text)).toBe(
      '<button type="submit" disabled aria-describedby="key-limit">Create key</button>',
    );
    expect(full.text).toMatch(/<input id="key-name"[^>]* disabled/);
    expect(full.text).toContain(
      '<p class="limit-reason" id="key-limit">Your plan allows 1 key; delete one to create another, or ask your operator for a larger plan.</p>',
    );

    // A stale tab (or a hand-made post) is still refused by the server, with the page's words.
    const refused = await visitor.post('/dashboard/keys', { name: 'two', csrf: visitor.csrfOf(full.text) });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Your free plan allows 1 API key and you have 1.');
    expect(await app.store.reads.keysOf(accountId)).toHaveLength(1);
  });

  it('puts each delete behind a confirmation step that needs no script, and says which key was deleted after', async () => {
    app = await startTestApp();
    const visitor = sessionBrowser(app);
    await visitor.signup('delete@example.com');
    const empty = await visitor.get('/dashboard/keys');
    const made = await visitor.post('/dashboard/keys', { name: 'laptop <b>', csrf: visitor.csrfOf(empty.text) });
    expect(made.status).toBe(201);
    const page = await visitor.get('/dashboard/keys');
    const keyId = /\/dashboard\/keys\/(key_[\w-]+)\/delete/.exec(page.text)?.[1] as string;
    const prefix = /<code>(sk_[\w-]+)…<\/code>/.exec(page.text)?.[1] as string;
    // The delete form is inside a closed <details>: a first click opens it and shows what is deleted, a second posts.
    expect(page.text).toMatch(
      /<details class="confirm"><summary>Delete…<\/summary><p>Delete <code>sk_[\w-]+…<\/code> \(laptop &lt;b>\)\? [^<]*This cannot be undone\.<\/p><form method="post" action="\/dashboard\/keys\/key_[\w-]+\/delete">/,
    );
    expect(page.text).not.toContain('was deleted');

    const deleted = await visitor.post(`/dashboard/keys/${keyId}/delete`, { csrf: visitor.csrfOf(page.text) });
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe(`/dashboard/keys?deleted=${keyId}`);
    const after = await visitor.get(deleted.headers.get('location') as string);
    expect(after.status).toBe(200);
    expect(after.text).toContain(
      `<p role="status">Key <code>${prefix}…</code> (laptop &lt;b>) was deleted. API calls with it are refused from now on.</p>`,
    );
    expect(after.text).toContain('You have no API keys yet.');
  });

  it('shows no deletion notice for a key that is not deleted, not the account’s, or no key at all', async () => {
    app = await startTestApp();
    const other = await app.account();
    const visitor = sessionBrowser(app);
    await visitor.signup('notice@example.com');
    const page = await visitor.get('/dashboard/keys');
    await visitor.post('/dashboard/keys', { csrf: visitor.csrfOf(page.text) });
    const own = /\/dashboard\/keys\/(key_[\w-]+)\/delete/.exec((await visitor.get('/dashboard/keys')).text)?.[1];
    // Another account's key, deleted by its owner: this account learns nothing of it.
    await Effect.runPromise(app.accounts.revokeKey(other.keyId));
    for (const id of [own, other.keyId, 'key_nope', '<script>']) {
      const answer = await visitor.get(`/dashboard/keys?deleted=${encodeURIComponent(id as string)}`);
      expect(answer.status, id).toBe(200);
      expect(answer.text, id).not.toContain('was deleted');
    }
  });
});
