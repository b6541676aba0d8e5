import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  binPath,
  cliJson,
  createAccountWithKey,
  fileSandboxes,
  poll,
  type Sandbox,
  type ServerProcess,
  sleep,
  startServer,
} from '../support/processes.js';

/**
 * Every example of docs/api.md, run as written against a real `airs serve`: each ```sh block whose first command is
 * `curl`, with `$AIRS` (the server), `$AIRS_KEY` (a free-plan key made with the CLI), `$AIRS_ADMIN_KEY` (an admin key
 * made with the CLI), `$ACCOUNT_ID`, `$KEY_ID` and `$TEAM_KEY` (what the Admin API's examples make), `$REQ_ID`, `$RESP_ID`,
 * `$FILE_ID` and `$BATCH_ID` set,
 * and the fenced block after it as the answer it must get. The answer is either what `curl -i` prints (status line,
 * headers, blank line, body) or a body whose last line is the status (`curl -w '\n%{http_code}'`). Checked: the
 * status; each header shown (its value, where `…` stands for anything); the body: a JSON body shown must be contained
 * in the one received (the same values for the fields shown, `…` inside a string standing for anything, and a bare
 * `…` as a value for any value), and each line of a body that is not JSON must match a line received; in a stream
 * (`text/event-stream`), in the order shown, so that a stream's frames are checked in order without every frame or
 * field being shown. The examples run in the order of the page, on one server, whose config allows the origin
 * `https://app.example.com` (the CORS examples).
 */

const root = join(binPath, '..', '..', '..', '..', '..');
const page = readFileSync(join(root, 'docs', 'api.md'), 'utf8');

type Fence = { readonly lang: string; readonly body: string; readonly heading: string };

const fencesOf = (markdown: string): Fence[] => {
  const fences: Fence[] = [];
  let heading = '';
  const lines = markdown.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index] ?? '';
    if (/^#{1,6} /.test(line)) heading = line.replace(/^#+ /, '');
    const open = /^```(\S*)\s*$/.exec(line);
    if (open === null) continue;
    const body: string[] = [];
    for (index++; index < lines.length && !(lines[index] ?? '').startsWith('```'); index++)
      body.push(lines[index] ?? '');
    fences.push({ lang: open[1] ?? '', body: body.join('\n'), heading });
  }
  return fences;
};

type Example = { readonly script: string; readonly answer: string | undefined };

const firstCommand = (script: string) =>
  script
    .split('\n')
    .map((line) => line.trim())
    .find((line) => line !== '' && !line.startsWith('#')) ?? '';

const examplesOf = (markdown: string): Example[] => {
  const fences = fencesOf(markdown);
  return fences.flatMap((fence, index) => {
    if (fence.lang !== 'sh' || !/^curl\s/.test(firstCommand(fence.body))) return [];
    const next = fences[index + 1];
    const answer = next === undefined || next.lang === 'sh' ? undefined : next.body;
    return [{ script: fence.body, answer }];
  });
};

// ---- Answers ----

type Answer = { readonly status: number; readonly headers: ReadonlyArray<[string, string]>; readonly body: string };

const statusLine = /^HTTP\/\S+ (\d{3})\b/;

/** What `curl -i` printed (the last block of headers after any 1xx), or a body followed by a status line of its own. */
const parseAnswer = (text: string): Answer | undefined => {
  const normal = text.replaceAll('\r\n', '\n');
  if (statusLine.test(normal)) {
    let rest = normal;
    for (;;) {
      const end = rest.indexOf('\n\n');
      const head = end < 0 ? rest : rest.slice(0, end);
      const after = end < 0 ? '' : rest.slice(end + 2);
      const [first = '', ...fields] = head.split('\n');
      const status = Number(statusLine.exec(first)?.[1]);
      if (status >= 200 || !statusLine.test(after)) {
        const headers = fields.map((field): [string, string] => {
          const colon = field.indexOf(':');
          return [field.slice(0, colon).trim().toLowerCase(), field.slice(colon + 1).trim()];
        });
        return { status, headers, body: after.replace(/\n$/, '') };
      }
      rest = after;
    }
  }
  const lines = normal.replace(/\n$/, '').split('\n');
  const last = lines.at(-1) ?? '';
  if (!/^\d{3}$/.test(last)) return undefined;
  return { status: Number(last), headers: [], body: lines.slice(0, -1).join('\n') };
};

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** A shown value as a pattern: `…` stands for any text. */
const pattern = (shown: string) => new RegExp(`^${shown.split('…').map(escapeRegExp).join('.*')}$`, 's');

/** What a bare `…` value of a shown JSON body becomes once parsed: any value. */
const anyValue = '\u0000any value';

/** A shown JSON body, where a bare `…` as a value (`"created_at":…`) stands for any value. */
const parseShownJson = (text: string) =>
  parseJson(text.replace(/([:[,]\s*)…(?=\s*[,}\]])/g, `$1${JSON.stringify(anyValue)}`));

/** A shown JSON value contained in a received one: the fields shown, with the same values (`…` in strings: any). */
const contains = (received: unknown, shown: unknown, at: string): string[] => {
  if (shown === anyValue) return received === undefined ? [`${at}: missing`] : [];
  if (typeof shown === 'string')
    return typeof received === 'string' && pattern(shown).test(received)
      ? []
      : [`${at}: expected ${JSON.stringify(shown)}, got ${JSON.stringify(received)}`];
  if (Array.isArray(shown)) {
    if (!Array.isArray(received) || received.length !== shown.length)
      return [`${at}: expected ${JSON.stringify(shown)}, got ${JSON.stringify(received)}`];
    return shown.flatMap((item, index) => contains(received[index], item, `${at}[${index}]`));
  }
  if (shown !== null && typeof shown === 'object') {
    if (received === null || typeof received !== 'object' || Array.isArray(received))
      return [`${at}: expected an object, got ${JSON.stringify(received)}`];
    return Object.entries(shown).flatMap(([name, value]) =>
      name in received
        ? contains((received as Record<string, unknown>)[name], value, `${at}.${name}`)
        : [`${at}.${name}: missing`],
    );
  }
  return Object.is(received, shown) ? [] : [`${at}: expected ${String(shown)}, got ${JSON.stringify(received)}`];
};

const parseJson = (text: string): { ok: true; value: unknown } | { ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
};

/** Where the received answer differs from the one shown (empty: it matches). */
const differences = (received: Answer, shown: Answer): string[] => {
  const problems: string[] = [];
  if (received.status !== shown.status) problems.push(`status: expected ${shown.status}, got ${received.status}`);
  for (const [name, value] of shown.headers) {
    const got = received.headers.filter(([header]) => header === name).map(([, v]) => v);
    if (!got.some((v) => pattern(value).test(v)))
      problems.push(`header ${name}: expected "${value}", got ${got.length === 0 ? 'none' : JSON.stringify(got)}`);
  }
  if (shown.body.trim() === '') return problems;
  const json = parseShownJson(shown.body);
  if (json.ok) {
    const got = parseJson(received.body);
    if (!got.ok) return [...problems, `body: expected JSON, got ${received.body.slice(0, 200)}`];
    return [...problems, ...contains(got.value, json.value, 'body')];
  }
  const lines = received.body.split('\n');
  const stream = received.headers.some(
    ([name, value]) => name === 'content-type' && value.startsWith('text/event-stream'),
  );
  // In a stream, each line shown is looked for after the one matched before it.
  let from = 0;
  for (const line of shown.body.split('\n')) {
    if (line.trim() === '…' || line.trim() === '') continue;
    const at = lines.findIndex((got, index) => index >= from && pattern(line).test(got));
    if (at < 0) problems.push(`body: no line like "${line}"${stream ? ' after the lines matched before it' : ''}`);
    else if (stream) from = at + 1;
  }
  return problems;
};

// ---- Routes ----

/** The method and path an example calls: `-X`, else POST when it sends data, else GET; the path after `$AIRS`. */
const routeOf = (script: string): { method: string; path: string } | undefined => {
  const command = script.replaceAll('\\\n', ' ');
  const url = /"?\$(?:\{AIRS\}|AIRS\b)(\/[^"'\s?]*)/.exec(command)?.[1];
  if (url === undefined) return undefined;
  const method =
    /(?:-X|--request)\s+([A-Z]+)/.exec(command)?.[1] ??
    (/\s(?:-d|--data\S*|-F|--form|--json)\s/.test(command) ? 'POST' : 'GET');
  return { method, path: url };
};

/** The routes the served OpenAPI document names (path templates such as `/v1/x/{id}`), and those it leaves out. */
const routesToShow = (openapi: { paths: Record<string, Record<string, unknown>> }) => [
  ...Object.entries(openapi.paths).flatMap(([path, operations]) =>
    Object.keys(operations)
      .filter((method) => ['get', 'post', 'put', 'patch', 'delete'].includes(method))
      .map((method) => ({ method: method.toUpperCase(), path })),
  ),
  { method: 'GET', path: '/metrics' },
];

const templateMatches = (template: string, path: string) =>
  new RegExp(
    `^${template
      .split(/\{[^}]+\}/)
      .map(escapeRegExp)
      .join('[^/]+')}$`,
  ).test(path);

// ---- The run ----

/** Each example named by its place and the call it makes: `example 3, GET /v1/ai?req_id=$REQ_ID`. */
const examples = examplesOf(page).map((example, index) => {
  const route = routeOf(example.script);
  const call = /\$AIRS(\S*?)"/.exec(example.script)?.[1] ?? '';
  return { ...example, title: `example ${index + 1}, ${route?.method ?? '?'} ${route === undefined ? '?' : call}` };
});
const newBox = fileSandboxes();

describe('The examples of docs/api.md, against a running server', { timeout: 60_000 }, () => {
  let box: Sandbox;
  let server: ServerProcess;
  let key: string;
  /** An admin key made with the CLI: `$AIRS_ADMIN_KEY` of the Admin API's examples. */
  let adminKey: string;
  /**
   * Set from the answers: a `request_id` answered by an example is `$REQ_ID` for the examples after it, a
   * Response's `resp_…` id is `$RESP_ID`, a file's `file-…` id `$FILE_ID` and a batch's `batch_…` id `$BATCH_ID`.
   */
  const variables: Record<string, string> = {};

  beforeAll(async () => {
    box = newBox('airs-api-examples');
    box.writeConfig({ cors: { allowedOrigins: ['https://app.example.com'] } });
    ({ key } = await createAccountWithKey(box, 'api-examples@example.com', 'free'));
    ({ key: adminKey } = await cliJson<{ key: string }>(box, ['admin-keys', 'create', '--name', 'api-examples']));
    server = await startServer(box);
  });

  it('the page has examples, and an answer after each', () => {
    expect(examples.length).toBeGreaterThan(5);
    const unanswered = examples.filter(
      (example) => example.answer === undefined || parseAnswer(example.answer) === undefined,
    );
    expect(unanswered.map((example) => example.title)).toEqual([]);
  });

  it.each(examples.map((example) => [example.title, example] as const))(
    '%s: answers as the page shows',
    async (_, example) => {
      const shown = parseAnswer(example.answer ?? '');
      if (shown === undefined) throw new Error(`no answer shown after: ${example.script}`);
      const { stdout } = await promisify(execFile)('bash', ['-eu', '-c', example.script], {
        cwd: box.dir,
        env: box.env({ AIRS: server.url, AIRS_KEY: key, AIRS_ADMIN_KEY: adminKey, ...variables }),
        timeout: 30_000,
        maxBuffer: 16 * 1024 * 1024,
      });
      const received = parseAnswer(stdout);
      if (received === undefined) throw new Error(`no status in what the example printed:\n${stdout.slice(0, 2000)}`);
      const answered = parseJson(received.body);
      // Taken before the answer is checked, so that the examples after this one run even when it fails.
      const requestId = answered.ok ? (answered.value as { request_id?: unknown }).request_id : undefined;
      const response = answered.ok ? (answered.value as { id?: unknown; status?: unknown }) : {};
      if (typeof response.id === 'string' && response.id.startsWith('resp_')) {
        variables.RESP_ID = response.id;
        // As a reader would, give a queued Response a moment to be taken by a worker; not more, since an example
        // after it cancels it while it is in progress.
        let status = response.status;
        for (let tries = 0; status === 'queued' && tries < 100; tries++) {
          await sleep(50);
          const retrieved = await fetch(`${server.url}/v1/responses/${response.id}`, {
            headers: { authorization: `Bearer ${key}` },
          });
          status = ((await retrieved.json()) as { status?: unknown }).status;
        }
      }
      if (typeof response.id === 'string' && response.id.startsWith('file-')) variables.FILE_ID = response.id;
      // The Admin API's: the account it made (`$ACCOUNT_ID`), the key it made (`$KEY_ID`) and that key (`$TEAM_KEY`).
      if (typeof response.id === 'string' && response.id.startsWith('acct_')) variables.ACCOUNT_ID = response.id;
      if (typeof response.id === 'string' && response.id.startsWith('key_')) variables.KEY_ID = response.id;
      const teamKey = (response as { key?: unknown }).key;
      if (typeof teamKey === 'string') variables.TEAM_KEY = teamKey;
      if (typeof response.id === 'string' && response.id.startsWith('batch_')) {
        variables.BATCH_ID = response.id;
        // As a reader would, let the batch run to its end before the examples that retrieve it.
        let status = response.status;
        for (
          let tries = 0;
          ['validating', 'in_progress', 'finalizing'].includes(String(status)) && tries < 400;
          tries++
        ) {
          await sleep(50);
          const retrieved = await fetch(`${server.url}/v1/batches/${response.id}`, {
            headers: { authorization: `Bearer ${key}` },
          });
          status = ((await retrieved.json()) as { status?: unknown }).status;
        }
      }
      if (typeof requestId === 'string') {
        variables.REQ_ID = requestId;
        // As a reader would, let the request be processed before the examples that poll it.
        for (let tries = 0; (await poll(server.url, key, requestId)).body.status === 'queued' && tries < 100; tries++)
          await sleep(50);
      }
      expect(differences(received, shown), stdout.slice(0, 2000)).toEqual([]);
    },
  );

  it('shows every route the server has: those of its OpenAPI document and /metrics', async () => {
    const openapi = (await (await fetch(`${server.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const shown = examples.flatMap((example) => routeOf(example.script) ?? []);
    const missing = routesToShow(openapi).filter(
      (route) => !shown.some((call) => call.method === route.method && templateMatches(route.path, call.path)),
    );
    expect(missing).toEqual([]);
  });
});
