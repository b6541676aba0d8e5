import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CreatedKey,
  cliJson,
  createAccountWithKey,
  killChildren,
  poll,
  runCli,
  type Sandbox,
  type ServerProcess,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

type ReplayJson = {
  events: Array<{ type: string; reqId?: string; accountId?: string; state?: string }>;
  final_states: Record<string, string>;
};

const expectError = (answer: { status: number; body: Record<string, unknown> }, status: number, code: string) => {
  expect(answer.status).toBe(status);
  expect((answer.body.error as { code?: string } | undefined)?.code).toBe(code);
};

/** Polls until the request is completed; returns its body. */
const completed = async (server: ServerProcess, key: string, reqId: string) => {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const answer = await poll(server.url, key, reqId);
    expect(answer.status).toBe(200);
    if (answer.body.status === 'completed' || Date.now() > deadline) return answer.body;
    await sleep(50);
  }
};

describe('management commands run from another process while the server runs', { timeout: 60_000 }, () => {
  let box: Sandbox;
  let server: ServerProcess;
  let emails = 0;
  const newAccount = (plan = 'starter') => createAccountWithKey(box, `live${++emails}@example.com`, plan);

  beforeAll(async () => {
    box = sandbox('airs-live');
    box.writeConfig({
      models: [
        { id: 'echo', provider: 'echo' },
        { id: 'slowish', provider: 'echo', delayMs: 30 },
      ],
      processing: { concurrency: 2 },
    });
    server = await startServer(box);
  }, 30_000);
  afterAll(async () => {
    await killChildren();
    box.remove();
  });

  it('a key revoked with `keys revoke` is refused with 401 on the very next request', async () => {
    const { accountId, key, keyId } = await newAccount();
    const other = await cliJson<CreatedKey>(box, ['keys', 'create', '--account', accountId]);
    // A key created by the CLI works on the server's very next request, too.
    const before = await submit(server.url, other.key, 'echo', 'before the revocation');
    expect(before.status).toBe(202);
    expect((await submit(server.url, key, 'echo', 'warm up')).status).toBe(202);

    const revoked = await runCli(box, ['keys', 'revoke', keyId]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(keyId);

    expectError(await submit(server.url, key, 'echo', 'after the revocation'), 401, 'unauthorized');
    expectError(await poll(server.url, key, String(before.body.request_id)), 401, 'unauthorized');
    // The account's other key is untouched and still sees the account's requests.
    expect((await submit(server.url, other.key, 'echo', 'other key')).status).toBe(202);
    expect((await poll(server.url, other.key, String(before.body.request_id))).status).toBe(200);
  });

  it('`accounts suspend` gives 403 on the next request and `accounts resume` lets the account work again', async () => {
    const { accountId, key } = await newAccount();
    const queued = await submit(server.url, key, 'echo', 'before the suspension');
    expect(queued.status).toBe(202);
    const reqId = String(queued.body.request_id);

    const suspended = await runCli(box, ['accounts', 'suspend', accountId]);
    expect(suspended.code).toBe(0);
    expectError(await submit(server.url, key, 'echo', 'while suspended'), 403, 'forbidden');
    expectError(await poll(server.url, key, reqId), 403, 'forbidden');
    const listed = await cliJson<Array<{ id: string; suspended: boolean }>>(box, ['accounts', 'list']);
    expect(listed.find((a) => a.id === accountId)?.suspended).toBe(true);

    const resumed = await runCli(box, ['accounts', 'resume', accountId]);
    expect(resumed.code).toBe(0);
    const again = await submit(server.url, key, 'echo', 'after the resumption');
    expect(again.status).toBe(202);
    expect(await completed(server, key, reqId)).toMatchObject({
      status: 'completed',
      response: 'before the suspension',
    });
    expect(await completed(server, key, String(again.body.request_id))).toMatchObject({
      status: 'completed',
      response: 'after the resumption',
    });
  });

  it('`replay` shows a request served by the running server, and `replay --verify` finds the views clean', async () => {
    const { accountId, key } = await newAccount('enterprise');
    const first = await submit(server.url, key, 'echo', 'replayed while serving');
    expect(first.status).toBe(202);
    const reqId = String(first.body.request_id);
    await completed(server, key, reqId);

    const timeline = await cliJson<ReplayJson>(box, ['replay', '--request', reqId]);
    expect(timeline.events.map((e) => e.type)).toEqual([
      'RequestQueued',
      'RequestProcessingStarted',
      'RequestCompleted',
    ]);
    expect(timeline.final_states).toEqual({ [reqId]: 'completed' });
    const text = await runCli(box, ['replay', '--account', accountId]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('AccountCreated');
    expect(text.stdout).toContain(`${reqId}: completed`);
    expect(text.stdout).not.toContain(key);

    // Verify while the server is busy writing: it reads one consistent snapshot.
    const busy = Array.from({ length: 20 }, (_, i) => submit(server.url, key, 'slowish', `busy ${i}`));
    const verified = await runCli(box, ['replay', '--verify']);
    const answers = await Promise.all(busy);
    expect(answers.map((a) => a.status)).toEqual(answers.map(() => 202));
    expect(verified.stderr).toBe('');
    expect(verified.code).toBe(0);
    expect(verified.stdout).toMatch(/every view matches the log/);
    const json = await cliJson<{ ok: boolean; differences: string[] }>(box, ['replay', '--verify']);
    expect(json).toMatchObject({ ok: true, differences: [] });
  });
});
