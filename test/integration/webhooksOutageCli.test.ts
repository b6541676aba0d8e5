import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { unusedPort } from '../support/ports.js';
import {
  type CliResult,
  cliJson,
  createAccountWithKey,
  killChildren,
  poll,
  runCli,
  type Sandbox,
  sandbox,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

// Issue 42, what an operator sees of an endpoint that is down, through the built CLI and `airs serve` (LMDB): the
// list says it fails, since when, how many deliveries wait and when the next attempt is; the delivery log shows each
// attempt; the commands that name an endpoint by its id need no --account (still accepted, and checked).

type Attempt = { attempt: number; at: string; status: number | null; latency_ms: number | null; error: string | null };
type DeliveryJson = { id: string; status: string; attempts: number; recent_attempts: Attempt[] };
type ListedJson = {
  id: string;
  status: string;
  failing_since: string | null;
  backlog: number;
  backlog_truncated: boolean;
  next_attempt_at: string | null;
};

const ok = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
};

describe('an endpoint that is down, as the CLI shows it', { timeout: 120_000 }, () => {
  const box: Sandbox = sandbox('airs-webhooks-outage');
  let accountId: string;
  let endpointId: string;
  beforeAll(async () => {
    box.writeConfig({
      models: [{ id: 'echo', provider: 'echo' }],
      webhooks: { allowHttp: true, allowPrivateNetworks: true },
    });
    const made = await createAccountWithKey(box, 'outage@example.com', 'scale');
    accountId = made.accountId;
    // Nothing listens on the endpoint's port: every attempt is refused.
    const port = await unusedPort();
    endpointId = (
      await cliJson<{ id: string }>(box, [
        'webhooks',
        'add',
        '--account',
        accountId,
        '--url',
        `http://127.0.0.1:${port}/hooks`,
      ])
    ).id;
    const server = await startServer(box);
    for (let i = 0; i < 2; i++) {
      const reqId = String((await submit(server.url, made.key, 'echo', `down ${i}`)).body.request_id);
      while ((await poll(server.url, made.key, reqId)).body.status !== 'completed') await sleep(20);
    }
    // Each delivery is attempted at once, then retried within 5 seconds: two attempts each.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const found = await cliJson<DeliveryJson[]>(box, ['webhooks', 'deliveries', endpointId, '--account', accountId]);
      if (found.length === 2 && found.every((d) => d.attempts >= 2)) break;
      if (Date.now() > deadline) throw new Error(`deliveries not retried: ${JSON.stringify(found)}`);
      await sleep(500);
    }
    await server.stop('SIGTERM');
  }, 120_000);
  afterAll(async () => {
    await killChildren();
    box.remove();
  });

  it('lists the endpoint as failing since its first failure, with its backlog and its next attempt', async () => {
    const [listed] = await cliJson<ListedJson[]>(box, ['webhooks', 'list', '--account', accountId]);
    expect(listed).toMatchObject({ id: endpointId, status: 'enabled', backlog: 2, backlog_truncated: false });
    expect(Date.parse(listed?.failing_since ?? '')).toBeGreaterThan(0);
    expect(Date.parse(listed?.next_attempt_at ?? '')).toBeGreaterThan(Date.parse(listed?.failing_since ?? ''));
    const text = ok(await runCli(box, ['webhooks', 'list', '--account', accountId]));
    expect(text).toMatch(
      new RegExp(
        `^${endpointId}  enabled .*  failing since \\d{4}-\\d\\d-\\d\\dT\\S+  backlog 2  next attempt \\d{4}-`,
      ),
    );
  });

  it('shows every attempt of each delivery (time, answer, latency, error), without --account', async () => {
    const deliveries = await cliJson<DeliveryJson[]>(box, ['webhooks', 'deliveries', endpointId]);
    expect(deliveries).toHaveLength(2);
    for (const delivery of deliveries) {
      expect(delivery.recent_attempts.map((a) => a.attempt)).toEqual(
        Array.from({ length: delivery.attempts }, (_, i) => i + 1),
      );
      for (const attempt of delivery.recent_attempts) {
        expect(attempt.status).toBeNull();
        expect(attempt.latency_ms).toEqual(expect.any(Number));
        expect(attempt.error).toMatch(/could not deliver to 127\.0\.0\.1/);
        expect(Date.parse(attempt.at)).toBeGreaterThan(0);
      }
    }
    const text = ok(await runCli(box, ['webhooks', 'deliveries', endpointId]));
    expect(text.match(/^ {4}attempt 1 {2}\d{4}-\S+ {2}no answer in \d+ ms {2}\(could not deliver/gm)).toHaveLength(2);
    expect(text.match(/^ {4}attempt 2 /gm)).toHaveLength(2);
  });

  it('recovers by endpoint id alone, and finds nothing given up yet', async () => {
    const since = new Date(Date.now() - 3_600_000).toISOString();
    expect(await cliJson(box, ['webhooks', 'recover', endpointId, '--since', since])).toEqual({
      redelivered: 0,
      scanned: 2,
      more: false,
    });
    expect(ok(await runCli(box, ['webhooks', 'recover', endpointId, '--since', since]))).toContain(
      `0 failed deliveries of webhook endpoint ${endpointId} since `,
    );
    const bad = await runCli(box, ['webhooks', 'recover', endpointId, '--since', 'yesterday-ish']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--since: "yesterday-ish" is not an ISO 8601 time or epoch milliseconds');
  });

  it('rotates, enables and removes by endpoint id alone; --account is still accepted, and refused for another account', async () => {
    const stranger = (await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', 'other@example.com'])).id;
    for (const verb of ['rotate-secret', 'enable', 'deliveries', 'remove', 'recover']) {
      const args = [
        'webhooks',
        verb,
        endpointId,
        '--account',
        stranger,
        ...(verb === 'recover' ? ['--since', '0'] : []),
      ];
      const refused = await runCli(box, args);
      expect(refused.code, verb).toBe(1);
      expect(refused.stderr.trim()).toBe(`airs: no webhook endpoint ${endpointId}`);
    }
    expect(ok(await runCli(box, ['webhooks', 'rotate-secret', endpointId]))).toMatch(/^whsec_/);
    expect(ok(await runCli(box, ['webhooks', 'rotate-secret', endpointId, '--account', accountId]))).toMatch(/^whsec_/);
    expect(ok(await runCli(box, ['webhooks', 'enable', endpointId]))).toContain(
      `webhook endpoint ${endpointId} is enabled`,
    );
    expect(ok(await runCli(box, ['webhooks', 'remove', endpointId]))).toContain(
      `webhook endpoint ${endpointId} is removed`,
    );
    expect(await cliJson(box, ['webhooks', 'list', '--account', accountId])).toEqual([]);
    const unknown = await runCli(box, ['webhooks', 'remove', 'whep_nothing']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr.trim()).toBe('airs: no webhook endpoint whep_nothing');
  });
});
