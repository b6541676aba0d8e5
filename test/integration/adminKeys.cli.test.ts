import { describe, expect, it } from 'vitest';
import { cliJson, fileSandboxes, runCli, type Sandbox, sleep, startServer } from '../support/processes.js';

/**
 * Admin keys through the real `airs` binary (product contract 21): made, listed and revoked by the CLI, used by an
 * operator's backend on a running `airs serve`, shown by `airs replay --account` beside every change they made, and
 * never written to the log lines.
 */

const newBox = fileSandboxes();

const withDebugLog = (box: Sandbox): Sandbox => ({ ...box, env: (extra) => box.env({ ...extra, LOG_LEVEL: 'debug' }) });

type AdminKey = { id: string; key: string; name: string | null };
type ListedAdminKey = {
  id: string;
  name: string | null;
  prefix: string;
  created_at: string;
  revoked_at: string | null;
};

const adminCall = async (url: string, key: string, method: string, path: string, body?: unknown) => {
  const response = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe('airs admin-keys', { timeout: 90_000 }, () => {
  it('creates (shown once), lists (never the key) and revokes admin keys; a revoke counts on the running server at once; replay names the admin key', async () => {
    const box = newBox('airs-admin-keys');
    const created = await cliJson<AdminKey>(box, ['admin-keys', 'create', '--name', 'backend']);
    expect(created).toEqual({
      id: expect.stringMatching(/^adminkey_[A-Za-z0-9_-]{16}$/),
      key: expect.any(String),
      name: 'backend',
    });
    expect(created.key).toMatch(/^sk_admin_[A-Za-z0-9_-]{43}$/);
    const words = await runCli(box, ['admin-keys', 'create']);
    expect(words.code).toBe(0);
    const second = words.stdout.split('\n')[0] as string;
    expect(second).toMatch(/^sk_admin_/);
    expect(words.stdout).toContain('store it now');

    const listed = await cliJson<ListedAdminKey[]>(box, ['admin-keys', 'list']);
    expect(listed).toHaveLength(2);
    expect(listed.find((key) => key.id === created.id)).toEqual({
      id: created.id,
      name: 'backend',
      prefix: created.key.slice(0, 17),
      created_at: expect.any(String),
      revoked_at: null,
    });
    expect(JSON.stringify(listed)).not.toContain(created.key);
    // Admin keys are no account's: the accounts list stays empty.
    expect(await cliJson<unknown[]>(box, ['accounts', 'list'])).toEqual([]);

    const server = await startServer(withDebugLog(box));
    const account = await adminCall(server.url, created.key, 'POST', '/v1/admin/accounts', {
      email: 'team@example.com',
    });
    expect(account.status).toBe(201);
    const accountId = account.body.id as string;
    const key = await adminCall(server.url, created.key, 'POST', `/v1/admin/accounts/${accountId}/keys`, {});
    expect(key.status).toBe(201);
    const teamKey = key.body.key as string;
    expect(
      (await adminCall(server.url, created.key, 'PATCH', `/v1/admin/accounts/${accountId}`, { plan: 'scale' })).status,
    ).toBe(200);

    const otherId = listed.find((k) => k.id !== created.id)?.id as string;
    expect((await adminCall(server.url, second, 'GET', '/v1/admin/accounts')).status).toBe(200);
    const revoked = await runCli(box, ['admin-keys', 'revoke', otherId]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`admin key ${otherId} is revoked`);
    // The server's very next call with it is refused: the revoke came from another process.
    expect((await adminCall(server.url, second, 'GET', '/v1/admin/accounts')).status).toBe(401);
    expect((await adminCall(server.url, created.key, 'GET', '/v1/admin/accounts')).status).toBe(200);
    expect((await runCli(box, ['admin-keys', 'revoke', 'adminkey_nonesuchnonesuch'])).code).not.toBe(0);

    await sleep(200);
    const log = server.stderr();
    expect(log).toContain('"path":"/v1/admin/accounts"');
    for (const secret of [created.key, second, teamKey]) expect(log).not.toContain(secret);
    expect(await server.stop('SIGTERM')).toBe(0);

    const replay = await runCli(box, ['replay', '--account', accountId]);
    expect(replay.code).toBe(0);
    const acted = replay.stdout.split('\n').filter((line) => line.includes('AdminActed'));
    expect(acted).toHaveLength(3);
    for (const [n, action] of ['CreateAccount', 'CreateKey', 'ChangePlan'].entries()) {
      expect(acted[n]).toContain(`adminKeyId=${created.id}`);
      expect(acted[n]).toContain(`action=${action}`);
    }
    expect(replay.stdout).not.toContain(created.key);
    const verify = await runCli(box, ['replay', '--verify']);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });
});
