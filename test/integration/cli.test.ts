import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { open } from 'lmdb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/ports/Clock.js';
import { changeStoredRequest } from '../support/lmdbData.js';
import {
  type CliResult,
  type CreatedKey,
  cliJson,
  killChildren,
  runCli,
  type Sandbox,
  sandbox,
} from '../support/processes.js';
import { startTestApp } from '../support/testApp.js';

type AccountJson = { id: string; email: string; plan: string; suspended: boolean };
type ReplayJson = {
  events: Array<{ type: string; seq: number; at: string; reqId?: string; accountId?: string }>;
  final_states: Record<string, string>;
};

/** A failure as the contract wants it: non-zero exit, nothing on stdout, exactly one line on stderr. */
const expectOneLineFailure = (result: CliResult, message?: RegExp) => {
  expect(result.code, result.stderr).not.toBe(0);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  if (message !== undefined) expect(result.stderr).toMatch(message);
};

const boxes: Sandbox[] = [];
const newBox = (label: string) => {
  const box = sandbox(label);
  boxes.push(box);
  return box;
};
afterAll(async () => {
  await killChildren();
  for (const box of boxes) box.remove();
});

describe('account and key commands', { timeout: 60_000 }, () => {
  let box: Sandbox;
  beforeAll(() => {
    box = newBox('airs-cli');
  });

  it('`accounts create` prints the account in words, or with --json exactly one JSON document', async () => {
    const text = await runCli(box, ['accounts', 'create', '--email', 'words@example.com']);
    expect(text.code).toBe(0);
    // In words, stderr says which data directory was used; stdout is the same as ever.
    expect(text.stderr).toBe(`airs: data directory ${box.dataDir} (from AIRS_DATA_DIR)\n`);
    expect(text.stdout).toMatch(/created account acct_\S+ \(words@example\.com, plan free\)/);

    const json = await runCli(box, ['accounts', 'create', '--email', 'json@example.com', '--plan', 'scale', '--json']);
    expect(json.code).toBe(0);
    expect(json.stderr).toBe('');
    const account = JSON.parse(json.stdout) as AccountJson;
    expect(account).toMatchObject({ email: 'json@example.com', plan: 'scale', suspended: false });

    const [listed, lines] = await Promise.all([
      cliJson<AccountJson[]>(box, ['accounts', 'list']),
      runCli(box, ['accounts', 'list']),
    ]);
    expect(listed.map((a) => a.email)).toEqual(expect.arrayContaining(['words@example.com', 'json@example.com']));
    expect(lines.code).toBe(0);
    expect(lines.stdout).toContain(account.id);
  });

  it('`keys create` prints the key once; `keys list` and `replay` show only its prefix and hash', async () => {
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'keys@example.com']);
    const created = await runCli(box, ['keys', 'create', '--account', account.id]);
    expect(created.code).toBe(0);
    const key = created.stdout.split('\n')[0] ?? '';
    expect(key).toMatch(/^sk_[A-Za-z0-9_-]{43,}$/);
    expect(created.stdout).toMatch(/cannot be shown again/);

    const outputs = await Promise.all([
      runCli(box, ['keys', 'list', '--account', account.id, '--json']),
      runCli(box, ['keys', 'list', '--account', account.id]),
      runCli(box, ['replay']),
      runCli(box, ['replay', '--json']),
    ]);
    const listed = JSON.parse(outputs[0]?.stdout ?? '') as Array<{ id: string; prefix: string }>;
    expect(listed).toHaveLength(1);
    const prefix = listed[0]?.prefix ?? '';
    expect(key.startsWith(prefix)).toBe(true);
    expect(prefix.length).toBeLessThan(key.length / 2);
    for (const output of outputs) {
      expect(output.code).toBe(0);
      expect(output.stdout).toContain(prefix);
      expect(output.stdout).not.toContain(key);
      expect(output.stdout).not.toContain(key.slice(3));
    }
    const hash = createHash('sha256').update(key).digest('hex');
    expect(outputs[2]?.stdout).toContain(hash);
  });

  it('a free account is refused a second key with a clear message, until its key is revoked or its plan grows', async () => {
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'limit@example.com']);
    const first = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
    expectOneLineFailure(
      await runCli(box, ['keys', 'create', '--account', account.id]),
      /free plan allows 1 active API key/,
    );

    expect((await runCli(box, ['keys', 'revoke', first.id])).code).toBe(0);
    const replacement = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', account.id]);
    expect(replacement.account_id).toBe(account.id);

    const moved = await cliJson<AccountJson>(box, ['accounts', 'set-plan', account.id, 'starter']);
    expect(moved.plan).toBe('starter');
    expect((await runCli(box, ['keys', 'create', '--account', account.id])).code).toBe(0);
  });

  it('an unknown plan, account or key, a missing option or an unknown command fail with one stderr line', async () => {
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'errors@example.com']);
    const cases: Array<[string[], RegExp]> = [
      [['accounts', 'create', '--email', 'gold@example.com', '--plan', 'gold'], /unknown plan "gold".*enterprise/],
      [['accounts', 'set-plan', account.id, 'platinum'], /unknown plan "platinum"/],
      [['accounts', 'suspend', 'acct_missing'], /acct_missing/],
      [['keys', 'create', '--account', 'acct_missing'], /acct_missing/],
      [['keys', 'revoke', 'key_missing'], /key_missing/],
      [['keys', 'create'], /--account/],
      [['accounts', 'create', '--email', 'errors@example.com'], /already exists/],
      [['replay', '--since', 'yesterday'], /--since/],
      [['frobnicate'], /frobnicate/],
    ];
    const results = await Promise.all(cases.map(([args]) => runCli(box, args)));
    for (const [i, result] of results.entries()) expectOneLineFailure(result, cases[i]?.[1]);
    const listed = await cliJson<AccountJson[]>(box, ['accounts', 'list']);
    expect(listed.map((a) => a.email)).not.toContain('gold@example.com');
    expect(listed.find((a) => a.id === account.id)?.plan).toBe('free');
  });
});

describe('accounts set-password', { timeout: 60_000 }, () => {
  it('reads the password from stdin, appends AccountPasswordSet (no hash in the log), and replay --verify stays clean', async () => {
    const box = newBox('airs-cli-password');
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'pw@example.com']);
    const set = await runCli(box, ['accounts', 'set-password', account.id], {
      input: 'correct horse battery staple\n',
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toBe(
      `account ${account.id} has a new password; its dashboard sessions are ended; it can log in at /dashboard/login\n`,
    );
    const replay = JSON.parse((await runCli(box, ['replay', '--json'])).stdout) as ReplayJson;
    const event = replay.events.find((e) => e.type === 'AccountPasswordSet');
    expect(event).toMatchObject({ type: 'AccountPasswordSet', accountId: account.id });
    expect(Object.keys(event ?? {}).sort()).toEqual(['accountId', 'at', 'seq', 'type']);
    expect((await runCli(box, ['replay', '--verify'])).code).toBe(0);
  });

  it('refuses a short password, an unknown account and a terminal-less empty stdin with one line each', async () => {
    const box = newBox('airs-cli-password-bad');
    const account = await cliJson<AccountJson>(box, ['accounts', 'create', '--email', 'short@example.com']);
    expectOneLineFailure(
      await runCli(box, ['accounts', 'set-password', account.id], { input: 'short\n' }),
      /at least 12 characters; this one has 5/,
    );
    expectOneLineFailure(
      await runCli(box, ['accounts', 'set-password', 'acct_nope'], { input: 'long enough password\n' }),
      /no account acct_nope/,
    );
    expectOneLineFailure(await runCli(box, ['accounts', 'set-password', account.id], { input: '' }), /at least 12/);
    const replay = JSON.parse((await runCli(box, ['replay', '--json'])).stdout) as ReplayJson;
    expect(replay.events.map((e) => e.type)).toEqual(['AccountCreated']);
  });
});

describe('over-long names', { timeout: 60_000 }, () => {
  it('refuses an email, account id or key id longer than any it could be with one line and exit 1, and goes on working', async () => {
    const box = newBox('airs-cli-long');
    const email = await runCli(box, ['accounts', 'create', '--email', `${'a'.repeat(3_000)}@example.com`]);
    expectOneLineFailure(email, /^airs: an email address has at most 254 characters; this one has 3012$/m);
    expect(email.code).toBe(1);
    const accountId = `acct_${'x'.repeat(3_000)}`;
    for (const args of [
      ['keys', 'revoke', `key_${'x'.repeat(3_000)}`],
      ['keys', 'create', '--account', accountId],
      ['keys', 'list', '--account', accountId],
      ['accounts', 'suspend', accountId],
      ['accounts', 'set-plan', accountId, 'scale'],
    ]) {
      const result = await runCli(box, args);
      expectOneLineFailure(result, /^airs: no (key|account) (key|acct)_x{95,96}…$/m);
      expect(result.code, args.join(' ')).toBe(1);
    }
    const created = await runCli(box, ['accounts', 'create', '--email', 'after@example.com']);
    expect(created.code, created.stderr).toBe(0);
  });
});

describe('a data directory that cannot be used', { timeout: 60_000 }, () => {
  it('a file, a path under a file, or a place where nothing can be created: one line naming it, exit 2, for serve and the CLI', async () => {
    const box = newBox('airs-cli-datadir');
    const file = join(box.dir, 'not-a-directory');
    writeFileSync(file, 'x');
    // [the setting, what serve and `accounts create` say, what a read command says]
    const cases: Array<[string, RegExp, RegExp]> = [
      [file, /is a file, not a directory/, /is a file, not a directory/],
      [join(file, 'data'), /not-a-directory is a file, not a directory/, /not-a-directory is a file, not a directory/],
      ...(existsSync('/proc/self')
        ? [
            [
              '/proc/airs-test/data',
              /cannot be created: \/proc\/airs-test/,
              /no airs database in \/proc\/airs-test\/data \(data directory from AIRS_DATA_DIR\)/,
            ] as [string, RegExp, RegExp],
          ]
        : []),
    ];
    for (const [dataDir, writing, reading] of cases) {
      for (const args of [['accounts', 'list'], ['accounts', 'create', '--email', 'x@example.com'], ['serve']]) {
        const message = args[1] === 'list' ? reading : writing;
        const result = await runCli(box, args, { env: { AIRS_DATA_DIR: dataDir, PORT: '0' }, timeoutMs: 15_000 });
        expectOneLineFailure(result, message);
        expect(result.stderr).toContain(dataDir);
        expect(result.code, `${args[0]} with ${dataDir}`).toBe(2);
      }
    }
  });
});

describe('a data directory of another storage layout', { timeout: 60_000 }, () => {
  it('is refused by serve and by every command with one line naming the directory, exit 2, and its log left as it was', async () => {
    const box = newBox('airs-cli-layout');
    // The first layout: one record per event in a database named `events`, no layout number.
    const root = open({ path: join(box.dataDir, 'airs.mdb'), maxDbs: 20 });
    await root.openDB({ name: 'events' }).put(1, { type: 'AccountCreated' });
    await root.close();
    for (const args of [['serve'], ['accounts', 'list'], ['replay'], ['replay', '--verify']]) {
      const result = await runCli(box, args, { env: { PORT: '0' } });
      expectOneLineFailure(result, /another storage layout \(1; this version reads 2\)/);
      expect(result.stderr).toContain(box.dataDir);
      expect(result.stderr).not.toMatch(/unexpected/);
      expect(result.code, args.join(' ')).toBe(2);
    }
    const again = open({ path: join(box.dataDir, 'airs.mdb'), maxDbs: 20 });
    expect(again.openDB({ name: 'events' }).get(1)).toEqual({ type: 'AccountCreated' });
    await again.close();
  });
});

describe('a bad config file', { timeout: 60_000 }, () => {
  const badConfigs: Array<[string, string, RegExp]> = [
    ['a port that is not a number', '{"port":"x"}', /: port: /],
    ['an unknown key', '{"colour":"blue"}', /colour/],
    ['text that is not JSON', '{"port": 80', /not valid JSON/],
    ['a negative submit budget', '{"plans":{"free":{"submitsPerMinute":-1}}}', /plans\.free\.submitsPerMinute/],
    ['a lifetime of 2^53 seconds', '{"requestTtlSeconds":9007199254740992}', /requestTtlSeconds: must be at most/],
  ];
  it.each(badConfigs)(
    'with %s makes `serve` and management commands exit non-zero, naming the field',
    async (_, config, field) => {
      const box = newBox('airs-badcfg');
      box.writeConfig(config);
      const [serve, list] = await Promise.all([
        runCli(box, ['serve'], { env: { PORT: '0' }, timeoutMs: 15_000 }),
        runCli(box, ['accounts', 'list']),
      ]);
      for (const result of [serve, list]) {
        expectOneLineFailure(result, field);
        expect(result.stderr).toMatch(/configuration/);
      }
    },
  );
  it('a LOG_LEVEL that is not a level stops `serve` with exit 2 and the list of levels', async () => {
    const box = newBox('airs-loglevel');
    const result = await runCli(box, ['serve'], { env: { PORT: '0', LOG_LEVEL: 'verbose' }, timeoutMs: 15_000 });
    expectOneLineFailure(result, /LOG_LEVEL: "verbose" is not a log level; use one of fatal, error, warn, info/);
    expect(result.code).toBe(2);
  });
});

describe('replay', { timeout: 60_000 }, () => {
  const t0 = Date.UTC(2026, 0, 1);
  let box: Sandbox;
  let first: { accountId: string; reqId: string };
  let second: { accountId: string; reqId: string };

  beforeAll(async () => {
    box = newBox('airs-replay');
    // The log is written in-process with a manual clock, so event times are known; no server runs.
    const clock = new ManualClock(t0);
    const app = await startTestApp({ dataDir: box.dataDir, clock });
    const submitAs = async (email: string) => {
      const { accountId, key } = await app.account('free', email);
      const posted = await app.call('POST', '/v1/ai', { key, body: { model: 'echo', prompt: email } });
      expect(posted.status).toBe(202);
      await app.processor.idle();
      return { accountId, reqId: String(((await posted.json()) as { request_id: string }).request_id) };
    };
    first = await submitAs('first@example.com');
    clock.advance(60_000);
    second = await submitAs('second@example.com');
    await app.stop({ keepData: true });
  }, 30_000);

  it('--request shows only that request’s events and the state it reaches', async () => {
    const json = await cliJson<ReplayJson>(box, ['replay', '--request', first.reqId]);
    expect(json.events.map((e) => [e.type, e.reqId])).toEqual([
      ['RequestQueued', first.reqId],
      ['RequestProcessingStarted', first.reqId],
      ['RequestCompleted', first.reqId],
    ]);
    expect(json.final_states).toEqual({ [first.reqId]: 'completed' });
    const text = await runCli(box, ['replay', '--request', first.reqId]);
    expect(text.code).toBe(0);
    expect(text.stdout.trimEnd().split('\n').at(-1)).toBe(`${first.reqId}: completed`);
    expect(text.stdout).not.toContain(second.reqId);
  });

  it('--account shows that account’s own events and its requests, and nothing of others', async () => {
    const json = await cliJson<ReplayJson>(box, ['replay', '--account', second.accountId]);
    expect(json.events.map((e) => e.type)).toEqual([
      'AccountCreated',
      'ApiKeyCreated',
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
    for (const event of json.events) expect([event.accountId, event.reqId]).not.toContain(first.accountId);
    expect(json.final_states).toEqual({ [second.reqId]: 'completed' });
  });

  it('--since shows only events at or after the given time, as ISO 8601 or epoch milliseconds', async () => {
    const [iso, epoch] = await Promise.all([
      cliJson<ReplayJson>(box, ['replay', '--since', new Date(t0 + 30_000).toISOString()]),
      cliJson<ReplayJson>(box, ['replay', '--since', String(t0 + 30_000)]),
    ]);
    expect(epoch.events).toEqual(iso.events);
    expect(iso.events.length).toBeGreaterThan(0);
    for (const event of iso.events) expect(Date.parse(event.at)).toBeGreaterThanOrEqual(t0 + 30_000);
    expect(iso.events.some((e) => e.reqId === second.reqId)).toBe(true);
    expect(iso.events.some((e) => e.reqId === first.reqId)).toBe(false);
    expect(iso.final_states).toEqual({ [second.reqId]: 'completed' });
    const all = await cliJson<ReplayJson>(box, ['replay']);
    expect(all.events.length).toBeGreaterThan(iso.events.length);
  });

  it('a --since it cannot read, or --verify with a filter, is a usage error: one line, exit 2', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['replay', '--since', 'yesterday'], /--since: "yesterday" is not an ISO 8601 time/],
      [['replay', '--verify', '--request', first.reqId], /cannot be combined with --request/],
      [['replay', '--verify', '--since', '0'], /cannot be combined/],
    ];
    for (const [args, message] of cases) {
      const result = await runCli(box, args);
      expectOneLineFailure(result, message);
      expect(result.code, args.join(' ')).toBe(2);
    }
  });

  it('--verify passes on an untouched log and names the request whose view was tampered with', async () => {
    const clean = await runCli(box, ['replay', '--verify']);
    expect(clean.code).toBe(0);
    expect(clean.stdout).toMatch(/every view matches the log/);

    // The same record with its view changed: status waiting, text kept.
    const stored = await changeStoredRequest(box.dataDir, first.reqId, (state) => ({ ...state, status: 'waiting' }));
    expect(stored?.status).toBe('completed');

    const tampered = await runCli(box, ['replay', '--verify']);
    expect(tampered.code).not.toBe(0);
    expect(tampered.stdout).toContain(`request ${first.reqId}`);
    expect(tampered.stdout).not.toContain(`request ${second.reqId}`);
    expect(tampered.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(tampered.stderr).toMatch(/views differ from the log/);
    const json = await runCli(box, ['replay', '--verify', '--json']);
    expect(json.code).not.toBe(0);
    const report = JSON.parse(json.stdout) as { ok: boolean; differences: string[] };
    expect(report.ok).toBe(false);
    expect(report.differences).toHaveLength(1);
    expect(report.differences[0]).toContain(first.reqId);
  });
});
