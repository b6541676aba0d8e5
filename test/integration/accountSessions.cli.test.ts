import { afterAll, describe, expect, it } from 'vitest';
import { sessionBrowser } from '../support/dashboardForm.js';
import {
  type CliResult,
  cliJson,
  fileSandboxes,
  runCli,
  type ServerProcess,
  startServer,
} from '../support/processes.js';

/**
 * Dashboard sessions against the operator's commands, each run from its own process while the server runs: a new
 * password ends every session, a suspension ends them all and refuses login and new keys, a resumption restores
 * login; the log stays verifiable throughout.
 */

const newBox = fileSandboxes();

const expectOneLineFailure = (result: CliResult, message: RegExp) => {
  expect(result.code, result.stderr).toBe(1);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr).toMatch(message);
};

describe('dashboard sessions and the operator’s commands', { timeout: 90_000 }, () => {
  let server: ServerProcess | undefined;
  afterAll(() => server?.stop());

  it('a password set with the CLI ends every session; a suspension ends them all and refuses login and keys; resume restores login', async () => {
    const box = newBox('airs-sessions');
    server = await startServer(box);
    const first = sessionBrowser(server);
    const second = sessionBrowser(server);
    expect((await first.signup('holder@example.com')).status).toBe(303);
    expect((await second.login('holder@example.com')).status).toBe(303);
    expect((await first.get('/dashboard/keys')).status).toBe(200);
    expect((await second.get('/dashboard/keys')).status).toBe(200);
    const [account] = await cliJson<{ id: string }[]>(box, ['accounts', 'list']);
    const id = (account as { id: string }).id;

    const set = await runCli(box, ['accounts', 'set-password', id], { input: 'the operator chose this\n' });
    expect(set.code, set.stderr).toBe(0);
    for (const visitor of [first, second]) {
      const page = await visitor.get('/dashboard/keys');
      expect(page.status).toBe(303);
      expect(page.headers.get('location')).toBe('/dashboard/login');
    }
    expect((await first.login('holder@example.com')).status).toBe(401);
    expect((await first.login('holder@example.com', 'the operator chose this')).status).toBe(303);
    expect((await first.get('/dashboard/keys')).status).toBe(200);

    expect((await runCli(box, ['accounts', 'suspend', id])).code).toBe(0);
    const afterSuspension = await first.get('/dashboard/keys');
    expect(afterSuspension.status).toBe(303);
    expect(afterSuspension.headers.get('location')).toBe('/dashboard/login');
    first.jar.delete('airs_session');
    const refused = await first.login('holder@example.com', 'the operator chose this');
    expect(refused.status).toBe(401);
    expect(refused.text).toContain('this account is suspended; contact the service operator');
    expectOneLineFailure(
      await runCli(box, ['keys', 'create', '--account', id]),
      new RegExp(`^airs: account ${id} is suspended: no API key can be created for it\\n$`),
    );

    expect((await runCli(box, ['accounts', 'resume', id])).code).toBe(0);
    expect((await first.login('holder@example.com', 'the operator chose this')).status).toBe(303);
    expect((await first.get('/dashboard/keys')).status).toBe(200);
    const verified = await runCli(box, ['replay', '--verify']);
    expect(verified.code, verified.stdout).toBe(0);
  });
});
