import { beforeAll, describe, expect, it } from 'vitest';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { call, cliJson, createAccountWithKey, runCli, type Sandbox } from '../support/processes.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * The dashboard's Batches page and its downloads over real HTTP (contract 16's dashboard line): a real `airs serve`
 * runs the batches, account holders log in with the form and a cookie jar, and fetch the page and the files.
 */

const password = 'correct horse battery staple';

/** A visitor's browser in miniature over the socket: keeps the cookies the server sets and sends them back. */
const visitor = (url: string) => {
  const jar = new Map<string, string>();
  const request = async (method: string, path: string, form?: Record<string, string>) => {
    const headers: Record<string, string> = {};
    if (jar.size > 0) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    if (form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(`${url}${path}`, {
      method,
      headers,
      body: form === undefined ? undefined : new URLSearchParams(form).toString(),
      redirect: 'manual',
    });
    for (const cookie of response.headers.getSetCookie()) {
      const [name, value] = (cookie.split(';')[0] as string).split('=') as [string, string];
      if (value === '') jar.delete(name);
      else jar.set(name, value);
    }
    return response;
  };
  return {
    get: (path: string) => request('GET', path),
    text: async (path: string) => (await request('GET', path)).text(),
    logIn: async (email: string) => {
      const form = await (await request('GET', '/dashboard/login')).text();
      const csrf = /name="csrf" value="([^"]+)"/.exec(form)?.[1] ?? '';
      const answer = await request('POST', '/dashboard/login', { email, password, csrf });
      expect(answer.status, await answer.text()).toBe(303);
    },
  };
};

/** The id of the account with `email`, and a dashboard password set for it through the CLI. */
const withPassword = async (box: Sandbox, email: string): Promise<string> => {
  const accounts = await cliJson<Array<{ id: string; email: string }>>(box, ['accounts', 'list']);
  const id = accounts.find((account) => account.email === email)?.id as string;
  const set = await runCli(box, ['accounts', 'set-password', id], { input: password });
  expect(set.code, set.stderr).toBe(0);
  return id;
};

/** The row of `batchId` in a Batches page. */
const rowOf = (html: string, batchId: string) =>
  new RegExp(`<tr id="${batchId}">[\\s\\S]*?</tr>`).exec(html)?.[0] ?? '';

describe('The dashboard’s Batches page against airs serve', { timeout: 120_000 }, () => {
  const serve = servedAirs();
  let served: ServedAirs;
  let batchId: string;
  let outputFileId: string;
  let errorFileId: string;
  const email = 'airs-dash-batches@example.com';
  const otherEmail = 'other-batches@example.com';

  beforeAll(async () => {
    served = await serve('airs-dash-batches');
    await withPassword(served.box, email);
    await createAccountWithKey(served.box, otherEmail);
    await withPassword(served.box, otherEmail);
    const { url, key } = served;
    // Two lines an echo answers, one whose attempts time out: an output file and an error file.
    const fileId = await uploadLines(url, key, [
      ...chatLines('echo', ['first', 'second']),
      { ...chatLines('doomed', ['never'])[0], custom_id: 'doomed' },
    ]);
    batchId = (await createBatch(url, key, fileId)).id;
    const ended = await batchWhen(url, key, batchId, isEnded);
    expect(ended.status).toBe('completed');
    outputFileId = ended.output_file_id as string;
    errorFileId = ended.error_file_id as string;
  }, 90_000);

  it('lists the account’s batch with its status, endpoint, progress, counts and links to its output and error files', async () => {
    const browser = visitor(served.url);
    await browser.logIn(email);

    const answer = await browser.get('/dashboard/batches');
    const html = await answer.text();

    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(html).toContain('<a href="/dashboard/batches" aria-current="page">Batches</a>');
    const row = rowOf(html, batchId);
    expect(row).toContain(`<code>${batchId}</code>`);
    expect(row).toContain('<span class="badge status-completed">completed</span>');
    expect(row).toContain('<code>/v1/chat/completions</code>');
    expect(row).toMatch(/<progress max="3" value="3"[^>]*>100%<\/progress><span>3 of 3 \(100%\)<\/span>/);
    expect(row).toContain('<td class="num">2</td><td class="num">1</td>');
    expect(row).toContain(`<a href="/dashboard/files/${outputFileId}" download>Output</a>`);
    expect(row).toContain(`<a href="/dashboard/files/${errorFileId}" download>Errors</a>`);
    // Every page's nav leads here.
    expect(await browser.text('/dashboard')).toContain('<a href="/dashboard/batches">Batches</a>');
  });

  it('downloads the output and error files by the session: the exact bytes the API gives, as attachments', async () => {
    const browser = visitor(served.url);
    await browser.logIn(email);

    for (const fileId of [outputFileId, errorFileId]) {
      const answer = await browser.get(`/dashboard/files/${fileId}`);
      const bytes = Buffer.from(await answer.arrayBuffer());

      expect(answer.status).toBe(200);
      expect(answer.headers.get('content-type')).toBe('application/octet-stream');
      expect(answer.headers.get('content-disposition')).toMatch(/^attachment; filename="[^"]+"/);
      expect(answer.headers.get('cache-control')).toBe('no-store');
      expect(Number(answer.headers.get('content-length'))).toBe(bytes.length);
      expect(bytes.equals(await fileContent(served.url, served.key, fileId))).toBe(true);
    }
    const output = Buffer.from(await (await browser.get(`/dashboard/files/${outputFileId}`)).arrayBuffer());
    const lines = output
      .toString()
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as { custom_id: string });
    expect(lines.map((line) => line.custom_id).sort()).toEqual(['c0', 'c1']);
  });

  it('answers another account’s session 404 for the files and does not list the batch to it', async () => {
    const other = visitor(served.url);
    await other.logIn(otherEmail);

    for (const fileId of [outputFileId, errorFileId]) {
      const answer = await other.get(`/dashboard/files/${fileId}`);
      expect(answer.status).toBe(404);
      expect(await answer.text()).not.toContain('custom_id');
    }
    const page = await other.text('/dashboard/batches');
    expect(page).not.toContain(batchId);
    expect(page).toContain('No batches yet.');
    // Unknown ids and ids that cannot be files are not found alike.
    expect((await other.get('/dashboard/files/file-AAAAAAAAAAAAAAAAAAAAAA')).status).toBe(404);
    expect((await other.get('/dashboard/files/..%2F..%2Fetc')).status).toBe(404);
  });

  it('sends a visitor without a session to the login page, from the page and from a download', async () => {
    const anonymous = visitor(served.url);
    for (const path of ['/dashboard/batches', `/dashboard/files/${outputFileId}`]) {
      const answer = await anonymous.get(path);
      expect(answer.status, path).toBe(303);
      expect(answer.headers.get('location')).toBe('/dashboard/login');
    }
  });

  it('pages through more batches than a page holds, newest first, by Older and Newer links', async () => {
    const { url } = served;
    const many = await createAccountWithKey(served.box, 'many-batches@example.com', 'scale');
    await withPassword(served.box, 'many-batches@example.com');
    // One input file, 27 batches of it: a page holds 25.
    const fileId = await uploadLines(url, many.key, chatLines('echo', ['hi']));
    const ids: string[] = [];
    for (let i = 0; i < 27; i++) ids.push((await createBatch(url, many.key, fileId)).id);
    // Newest first as the API lists them (two made in one millisecond are in the store's order).
    const listed = await call(url, 'GET', '/v1/batches?limit=100', many.key);
    const newestFirst = (listed.body.data as Array<{ id: string }>).map((batch) => batch.id);
    expect([...newestFirst].sort()).toEqual([...ids].sort());
    const browser = visitor(url);
    await browser.logIn('many-batches@example.com');
    const idsIn = (html: string) => [...html.matchAll(/<tr id="(batch_[\w-]+)">/g)].map((match) => match[1]);

    const first = await browser.text('/dashboard/batches');
    expect(idsIn(first)).toEqual(newestFirst.slice(0, 25));
    expect(first).not.toContain('← Newer');
    const older = /href="(\/dashboard\/batches\?before=[^"]+)">Older →/.exec(first)?.[1] as string;
    const second = await browser.text(older.replaceAll('&amp;', '&'));
    expect(idsIn(second)).toEqual(newestFirst.slice(25));
    expect(second).not.toContain('Older →');
    const newer = /href="(\/dashboard\/batches\?after=[^"]+)">← Newer/.exec(second)?.[1] as string;
    expect(idsIn(await browser.text(newer))).toEqual(newestFirst.slice(0, 25));
    // A link that names no page is said so.
    expect((await browser.get('/dashboard/batches?before=nonsense')).status).toBe(400);
  });
});
