import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopTestCluster, tablesIn, testCluster } from '../support/postgres.js';
import { fileSandboxes, runCli } from '../support/processes.js';

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const newBox = fileSandboxes();

describe('the CLI on a PostgreSQL store', { timeout: 60_000 }, () => {
  it('creates an account and a key there, lists them, and shows them in the log, naming the database without its password', async () => {
    const url = (await (await testCluster()).createDatabase()).replace('postgres@', 'postgres:not-shown@');
    const box = newBox('airs-pg-cli');
    const created = await runCli(box, ['accounts', 'create', '--email', 'pg@example.com', '--database-url', url]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stderr).toMatch(
      /^airs: database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+ \(from --database-url\)/,
    );
    expect(created.stderr).not.toContain('not-shown');
    const account = /acct_[\w-]+/.exec(created.stdout)?.[0] ?? '';
    const key = await runCli(box, ['keys', 'create', '--account', account], { env: { AIRS_DATABASE_URL: url } });
    expect(key.code, key.stderr).toBe(0);
    const keys = await runCli(box, ['keys', 'list', '--account', account, '--json'], {
      env: { AIRS_DATABASE_URL: url },
    });
    expect(keys.code, keys.stderr).toBe(0);
    expect(JSON.parse(keys.stdout)).toHaveLength(1);
    const log = await runCli(box, ['replay', '--json', '--database-url', url]);
    expect(log.code, log.stderr).toBe(0);
    expect((JSON.parse(log.stdout) as { events: { type: string }[] }).events.map((event) => event.type)).toEqual([
      'AccountCreated',
      'ApiKeyCreated',
    ]);
  });

  it('answers ids that cannot be ids as unknown with one line and exit 1, without asking the database (contract 18)', async () => {
    const url = await (await testCluster()).createDatabase();
    const box = newBox('airs-pg-ids');
    const env = { AIRS_DATABASE_URL: url };
    expect((await runCli(box, ['accounts', 'create', '--email', 'ids@example.com'], { env })).code).toBe(0);
    for (const [args, line] of [
      [['requests', 'cancel', "req_' OR '1'='1"], /^airs: no request req_' OR '1'='1$/],
      [['requests', 'cancel', 'req_\u001b[31m'], /^airs: no request req_\\x1b\[31m$/],
      [['keys', 'revoke', 'key_ü😀'], /^airs: no key key_ü😀$/],
      [['accounts', 'suspend', "acct_'"], /^airs: no account acct_'$/],
    ] as const) {
      const result = await runCli(box, [...args], { env });
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr.trim().split('\n').at(-1)).toMatch(line);
    }
  });

  it('refuses a database without airs in it, for a command that does not create, and makes nothing there', async () => {
    const url = await (await testCluster()).createDatabase();
    const listed = await runCli(newBox('airs-pg-empty'), ['accounts', 'list', '--database-url', url]);
    expect(listed.code).toBe(2);
    expect(listed.stderr).toMatch(
      /^airs: no airs database in the database postgres:\/\/.* \(from --database-url\); nothing was created/,
    );
    expect(listed.stderr.trim().split('\n')).toHaveLength(1);
    expect(await tablesIn(url)).toEqual([]);
  });

  it('says in one line that a database it cannot reach cannot be reached, exit 2', async () => {
    const cluster = await testCluster();
    const url = `postgres://postgres@127.0.0.1:1/${new URL(cluster.url()).pathname.slice(1)}`;
    const listed = await runCli(newBox('airs-pg-unreachable'), ['keys', 'list', '--account', 'acct_x'], {
      env: { AIRS_DATABASE_URL: url },
    });
    expect(listed.code).toBe(2);
    expect(listed.stderr).toMatch(
      /^airs: cannot reach the database postgres:\/\/postgres@127\.0\.0\.1:1\/\S+ \(from AIRS_DATABASE_URL\): /,
    );
    expect(listed.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('refuses a backup of a database, naming PostgreSQL’s own tools', async () => {
    const url = await (await testCluster()).createDatabase();
    const backup = await runCli(newBox('airs-pg-backup'), ['backup', '/tmp/airs-never-made', '--database-url', url]);
    expect(backup.code).toBe(2);
    expect(backup.stderr).toMatch(/^airs: the store is the database .*pg_dump/);
  });

  it('refuses a URL that is not postgres:// with one line naming where it came from', async () => {
    const listed = await runCli(newBox('airs-pg-bad-url'), ['accounts', 'list'], {
      env: { AIRS_DATABASE_URL: 'mysql://db/airs' },
    });
    expect(listed.code).toBe(2);
    expect(listed.stderr).toMatch(/^airs: bad configuration: AIRS_DATABASE_URL: must be a postgres:\/\//);
  });
});
