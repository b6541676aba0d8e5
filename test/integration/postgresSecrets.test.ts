import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { type CliResult, fileSandboxes, runCli, startServer, stderrShowing } from '../support/processes.js';

// Contract 18, "Secrets in URLs": a database URL's secrets (the user part's password, `?password=`, `?sslpassword=`,
// any parameter naming a secret) appear in no line the CLI or the server writes, whether the database is reached or
// not.

beforeAll(() => testCluster().then(() => {}), 120_000);
afterAll(() => stopTestCluster(), 60_000);

const newBox = fileSandboxes();

/** Markers unique to this run, one per place a secret can be put in the URL. */
const markers = {
  user: `userpw${randomUUID().slice(0, 8)}`,
  password: `querypw${randomUUID().slice(0, 8)}`,
  sslpassword: `sslpw${randomUUID().slice(0, 8)}`,
  token: `tok${randomUUID().slice(0, 8)}`,
};

/** `url` (a database on the test cluster, user `postgres`, which trusts it) with a secret in every place. */
const withSecrets = (url: string) => {
  const parsed = new URL(url);
  parsed.password = markers.user;
  return `${parsed.toString()}?application_name=airs-secrets&Password=${markers.password}&sslpassword=${markers.sslpassword}&auth_token=${markers.token}`;
};

const expectNoSecret = (what: string, text: string) => {
  for (const marker of Object.values(markers)) expect(text, `${what} shows a secret`).not.toContain(marker);
};

const expectClean = (result: CliResult) => {
  expectNoSecret('stdout', result.stdout);
  expectNoSecret('stderr', result.stderr);
};

/** The masked form the lines name the database by. */
const maskedForm =
  /postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/\w+\?application_name=airs-secrets&Password=\*\*\*&sslpassword=\*\*\*&auth_token=\*\*\*/;

describe('a database URL with secrets in it, through the CLI', { timeout: 60_000 }, () => {
  it('on a database it reaches: the commands and the server name it masked, and show no secret', async () => {
    const url = withSecrets(await (await testCluster()).createDatabase());
    const box = newBox('airs-pg-secrets');
    const env = { AIRS_DATABASE_URL: url };

    const created = await runCli(box, ['accounts', 'create', '--email', 'secrets@example.com'], { env });
    expect(created.code, created.stderr).toBe(0);
    expectClean(created);
    expect(created.stderr).toMatch(new RegExp(`^airs: database ${maskedForm.source} \\(from AIRS_DATABASE_URL\\)`));

    const listed = await runCli(box, ['accounts', 'list', '--database-url', url]);
    expect(listed.code, listed.stderr).toBe(0);
    expectClean(listed);
    expect(listed.stderr).toMatch(maskedForm);

    const server = await startServer(box, { env });
    try {
      const logs = await stderrShowing(server, maskedForm);
      expect(logs).toMatch(maskedForm);
      expectNoSecret('the server log', logs);
    } finally {
      await server.stop();
    }
    expectNoSecret('the server log', server.stderr());
  });

  it('on a database it cannot reach: every command and the server fail without showing a secret', async () => {
    const cluster = await testCluster();
    const url = withSecrets(`postgres://postgres@127.0.0.1:1/${new URL(cluster.url()).pathname.slice(1)}`);
    const box = newBox('airs-pg-secrets-unreachable');
    const env = { AIRS_DATABASE_URL: url };

    const listed = await runCli(box, ['accounts', 'list'], { env });
    expect(listed.code).toBe(2);
    expect(listed.stderr).toMatch(new RegExp(`^airs: cannot reach the database ${maskedForm.source} `));
    expectClean(listed);

    const created = await runCli(box, ['accounts', 'create', '--email', 'secrets@example.com'], { env });
    expect(created.code).not.toBe(0);
    expectClean(created);

    const replayed = await runCli(box, ['replay', '--json'], { env });
    expect(replayed.code).not.toBe(0);
    expectClean(replayed);

    // migrate names the database it copies into with the URL of --to: a data directory to copy first.
    const source = await runCli(box, ['accounts', 'create', '--email', 'lmdb@example.com']);
    expect(source.code, source.stderr).toBe(0);
    const migrated = await runCli(box, ['migrate', '--from', box.dataDir, '--to', url]);
    expect(migrated.code).toBe(2);
    expect(migrated.stderr).toMatch(/^airs: cannot reach the database postgres:\/\/postgres:\*\*\*@/);
    expectClean(migrated);

    const served = await startServer(box, { env, timeoutMs: 20_000 }).then(
      async (server) => {
        await server.stop();
        return `listening: ${server.stderr()}`;
      },
      (error: Error) => error.message,
    );
    expect(served).toMatch(/exited \(\d+\) before listening/);
    expectNoSecret('the server', served);
  });
});
