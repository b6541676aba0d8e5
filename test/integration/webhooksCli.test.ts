import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliResult, cliJson, runCli, type Sandbox, sandbox } from '../support/processes.js';

/*
 * Issue 30: `airs webhooks …` through the built CLI, against a data directory. The receivers are on 127.0.0.1, so the
 * config allows private networks (as the tests do); one sandbox keeps the default, to see the refusal.
 */

type EndpointJson = {
  id: string;
  account_id: string;
  url: string;
  events: string[];
  status: string;
  previous_secret_valid_until: string | null;
  secret?: string;
};

/** A refusal: the status, nothing on stdout, and one line on stderr. */
const refusal = (result: CliResult, code: number) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  return lines[0] as string;
};

const account = async (box: Sandbox, email: string, plan = 'free') =>
  (await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', email, '--plan', plan])).id;

describe('airs webhooks', () => {
  const box = sandbox('airs-webhooks-cli');
  let free: string;
  beforeAll(async () => {
    box.writeConfig({ webhooks: { allowPrivateNetworks: true } });
    free = await account(box, 'free@example.com');
  });
  afterAll(() => box.remove());

  it('adds an endpoint and prints its secret once, with a line saying so; list never shows it', async () => {
    const added = await runCli(box, [
      'webhooks',
      'add',
      '--account',
      free,
      '--url',
      'https://127.0.0.1:9443/hooks',
      '--events',
      'request.completed, request.failed',
    ]);
    expect(added.code, added.stderr).toBe(0);
    const [secret, note, ...rest] = added.stdout.trimEnd().split('\n');
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(note).toMatch(/^\(signing secret of webhook endpoint whep_\S{16} of account /);
    expect(note).toContain('events: request.completed,request.failed');
    expect(note).toContain('it is shown once');
    expect(rest).toEqual([]);
    const endpointId = /whep_\S{16}/.exec(note as string)?.[0] as string;

    const listed = await cliJson<EndpointJson[]>(box, ['webhooks', 'list', '--account', free]);
    expect(listed).toEqual([
      expect.objectContaining({
        id: endpointId,
        account_id: free,
        url: 'https://127.0.0.1:9443/hooks',
        events: ['request.completed', 'request.failed'],
        status: 'enabled',
      }),
    ]);
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    const lines = await runCli(box, ['webhooks', 'list', '--account', free]);
    expect(lines.stdout).toMatch(new RegExp(`^${endpointId}  enabled .* https://127\\.0\\.0\\.1:9443/hooks  events: `));
    expect(lines.stdout).not.toContain('whsec_');

    // The free plan's bound: one endpoint.
    const second = await runCli(box, ['webhooks', 'add', '--account', free, '--url', 'https://127.0.0.1:9444/']);
    expect(refusal(second, 1)).toBe(
      `airs: the free plan allows 1 webhook endpoint and account ${free} has 1 (maxWebhookEndpoints); remove one or move to a larger plan`,
    );
  }, 120_000);

  it('rotates the secret (printed once, the old one signing 24 hours more), enables, and removes', async () => {
    const owner = await account(box, 'rotate@example.com', 'starter');
    const added = await cliJson<EndpointJson>(box, [
      'webhooks',
      'add',
      '--account',
      owner,
      '--url',
      'https://127.0.0.1:9443/',
    ]);
    expect(added.secret).toMatch(/^whsec_/);
    expect(added.events).toEqual([]);

    const rotated = await runCli(box, ['webhooks', 'rotate-secret', '--account', owner, added.id]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const [secret, note, overlap] = rotated.stdout.trimEnd().split('\n');
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(added.secret);
    expect(note).toContain(`new signing secret of webhook endpoint ${added.id}`);
    expect(note).toContain('it is shown once');
    expect(overlap).toMatch(/^\(the previous secret still signs every delivery until \d{4}-\d\d-\d\dT/);
    const again = await cliJson<EndpointJson>(box, ['webhooks', 'rotate-secret', '--account', owner, added.id]);
    expect(again.secret).not.toBe(secret);
    expect(again.previous_secret_valid_until).not.toBeNull();

    // The log names secrets by id only: neither the timeline, nor one account's, nor the verification shows one.
    for (const args of [['replay'], ['replay', '--account', owner], ['replay', '--verify']]) {
      const replayed = await runCli(box, args);
      expect(replayed.code, replayed.stderr).toBe(0);
      expect(`${replayed.stdout}${replayed.stderr}`).not.toMatch(/whsec_/);
      if (args.length === 1) expect(replayed.stdout).toContain('WebhookSecretRotated');
      if (args[1] === '--verify')
        expect(replayed.stdout).toMatch(
          /every view matches the log \(.*, \d+ webhook endpoints, 0 webhook deliveries\)/,
        );
    }

    // Enabling an enabled endpoint changes nothing, and succeeds.
    const enabled = await runCli(box, ['webhooks', 'enable', '--account', owner, added.id]);
    expect(enabled.code, enabled.stderr).toBe(0);
    expect(enabled.stdout).toContain(`webhook endpoint ${added.id} is enabled`);
    expect((await cliJson<EndpointJson>(box, ['webhooks', 'enable', '--account', owner, added.id])).status).toBe(
      'enabled',
    );

    const empty = await runCli(box, ['webhooks', 'deliveries', '--account', owner, added.id, '--limit', '5']);
    expect(empty.code, empty.stderr).toBe(0);
    expect(empty.stdout).toBe('no deliveries\n');

    const removed = await runCli(box, ['webhooks', 'remove', '--account', owner, added.id]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain(`webhook endpoint ${added.id} is removed`);
    expect(await cliJson(box, ['webhooks', 'list', '--account', owner])).toEqual([]);
    expect((await runCli(box, ['webhooks', 'list', '--account', owner])).stdout).toBe('no webhook endpoints\n');
  }, 120_000);

  it('names what it does not know: endpoints, deliveries, accounts, event types', async () => {
    const owner = await account(box, 'unknown@example.com');
    const stranger = await account(box, 'stranger@example.com');
    const { id } = await cliJson<EndpointJson>(box, [
      'webhooks',
      'add',
      '--account',
      owner,
      '--url',
      'https://127.0.0.1:9443/',
    ]);
    // Another account's endpoint is unknown to it (each verb is checked through the service: test/app/webhooks.test.ts).
    for (const verb of ['remove', 'deliveries'])
      expect(refusal(await runCli(box, ['webhooks', verb, '--account', stranger, id]), 1)).toBe(
        `airs: no webhook endpoint ${id}`,
      );
    expect(refusal(await runCli(box, ['webhooks', 'remove', '--account', owner, 'whep_nothing']), 1)).toBe(
      'airs: no webhook endpoint whep_nothing',
    );
    expect(refusal(await runCli(box, ['webhooks', 'redeliver', '--account', owner, 'wh_nothing']), 1)).toBe(
      'airs: no webhook delivery wh_nothing',
    );
    expect(
      refusal(await runCli(box, ['webhooks', 'deliveries', '--account', owner, id, '--before', 'wh_nothing']), 1),
    ).toBe('airs: no webhook delivery wh_nothing');
    expect(refusal(await runCli(box, ['webhooks', 'list', '--account', 'acct_AAAAAAAAAAAAAAAA']), 1)).toBe(
      'airs: no account acct_AAAAAAAAAAAAAAAA',
    );
    const events = refusal(
      await runCli(box, [
        'webhooks',
        'add',
        '--account',
        stranger,
        '--url',
        'https://127.0.0.1:9443/',
        '--events',
        'request.done',
      ]),
      1,
    );
    expect(events).toMatch(/^airs: unknown webhook event type "request\.done"; known types: .*request\.completed/);
    expect(refusal(await runCli(box, ['webhooks', 'deliveries', '--account', owner, id, '--limit', '0']), 2)).toBe(
      'airs: --limit: expected an integer from 1 to 100, got "0"',
    );
  }, 120_000);
});

describe('airs webhooks add without webhooks.allowPrivateNetworks', () => {
  const box = sandbox('airs-webhooks-ssrf');
  afterAll(() => box.remove());

  it('refuses a loopback address and http://, adding nothing', async () => {
    const owner = await account(box, 'ssrf@example.com');
    const loopback = await runCli(box, ['webhooks', 'add', '--account', owner, '--url', 'https://127.0.0.1/']);
    expect(refusal(loopback, 1)).toBe(
      'airs: 127.0.0.1 is a loopback address; webhooks are sent only to public addresses (webhooks.allowPrivateNetworks)',
    );
    const http = await runCli(box, ['webhooks', 'add', '--account', owner, '--url', 'http://127.0.0.1/']);
    expect(refusal(http, 1)).toBe(
      'airs: a webhook URL must start with https:// (the operator has not allowed http: webhooks.allowHttp)',
    );
    expect(await cliJson(box, ['webhooks', 'list', '--account', owner])).toEqual([]);
  }, 120_000);
});
