import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newWebhookSecret, signWebhook } from '../../src/app/webhooks/signing.js';
import { envelopeEventOf } from '../../src/domain/webhook/dueDeliveries.js';
import { webhookBody } from '../../src/domain/webhook/envelope.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { unusedPort } from '../support/ports.js';
import { eventually } from '../support/testApp.js';

/**
 * The README's webhook receiver, copied from the README as written and run with node as a user would run it: it
 * accepts a delivery signed as airs signs them (app/webhooks/signing.ts, the body envelope.ts makes), once, and refuses
 * a delivery whose body was altered after signing and one signed too long ago, through the `openai` SDK's
 * `client.webhooks.unwrap()`. No airs server is needed: the deliveries are made here with the sender's own code.
 */

const root = resolve(import.meta.dirname, '../..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The README's receiver: the first ```js block after its marker comment, so the test cannot drift from it. */
const example = (() => {
  const marker = readme.indexOf('<!-- airs webhook receiver example:');
  const block = /```js\n([\s\S]*?)```/.exec(readme.slice(marker));
  if (marker < 0 || block?.[1] === undefined) throw new Error('README.md has no marked webhook receiver example');
  return block[1];
})();

const endpointId = `whep_${'R'.repeat(16)}`;

/** A delivery of `type` about `reqId` to the test's endpoint, as the sender makes it: its body and its headers. */
const delivery = (reqId: string, secret: string, signedAtMs = Date.now()) => {
  const eventId = webhookEventId(reqId, 'request.completed');
  const body = webhookBody(
    envelopeEventOf({ eventId, eventType: 'request.completed', dataId: reqId, createdAt: signedAtMs }),
  );
  const headers = signWebhook({
    id: webhookDeliveryId(eventId, endpointId),
    timestampMs: signedAtMs,
    body,
    secrets: [secret],
  });
  return { body, headers };
};

describe('the README’s webhook receiver', { timeout: 60_000 }, () => {
  const secret = newWebhookSecret();
  let dir: string;
  let receiver: ChildProcess;
  let url: string;
  let stdout = '';
  let stderr = '';

  beforeAll(async () => {
    // A directory of its own under the OS's temp directory, with this checkout's packages (the `openai` SDK) linked.
    dir = mkdtempSync(join(tmpdir(), 'airs-readme-receiver-'));
    symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
    writeFileSync(join(dir, 'receiver.mjs'), example);
    const port = await unusedPort();
    url = `http://127.0.0.1:${port}/`;
    receiver = spawn(process.execPath, ['receiver.mjs'], {
      cwd: dir,
      env: { PATH: process.env.PATH, PORT: String(port), AIRS_WEBHOOK_SECRET: secret },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    receiver.stdout?.setEncoding('utf8').on('data', (text: string) => {
      stdout += text;
    });
    receiver.stderr?.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    await eventually(() => (stdout.includes(`listening on 127.0.0.1:${port}`) ? true : undefined), 20_000).catch(() => {
      throw new Error(`the receiver did not start: ${stderr}`);
    });
  }, 60_000);

  afterAll(async () => {
    if (receiver !== undefined && receiver.exitCode === null && receiver.signalCode === null) {
      const exited = new Promise((done) => receiver.once('exit', done));
      receiver.kill('SIGKILL');
      await exited;
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  const post = (body: string, headers: Record<string, string>) =>
    fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

  it('accepts a delivery signed as airs signs it, once, and refuses one altered after signing or signed too long ago', async () => {
    const reqId = `req_${'a'.repeat(34)}`;
    const signed = delivery(reqId, secret);
    const accepted = await post(signed.body, signed.headers);
    expect(accepted.status).toBe(200);
    await eventually(() => (stdout.includes(`request.completed ${reqId}\n`) ? true : undefined));

    // The body changed after signing (another request's id): the signature no longer matches.
    const otherId = `req_${'b'.repeat(34)}`;
    const tampered = await post(signed.body.replace(reqId, otherId), signed.headers);
    expect(tampered.status).toBe(400);

    // Signed with the right secret ten minutes ago: a replay, refused (the SDK allows 5 minutes).
    const late = delivery(`req_${'c'.repeat(34)}`, secret, Date.now() - 10 * 60_000);
    expect((await post(late.body, late.headers)).status).toBe(400);

    // Signed with another secret: refused.
    const foreign = delivery(`req_${'d'.repeat(34)}`, newWebhookSecret());
    expect((await post(foreign.body, foreign.headers)).status).toBe(400);

    // The same delivery again (a retry after a lost answer): acknowledged, and not handled twice. A new delivery
    // after it is handled: its line comes after any line the repeat would have written.
    expect((await post(signed.body, signed.headers)).status).toBe(200);
    const nextId = `req_${'e'.repeat(34)}`;
    const next = delivery(nextId, secret);
    expect((await post(next.body, next.headers)).status).toBe(200);
    await eventually(() => (stdout.includes(`request.completed ${nextId}\n`) ? true : undefined));
    expect(stdout.split('\n').filter((line) => line.startsWith('request.completed'))).toEqual([
      `request.completed ${reqId}`,
      `request.completed ${nextId}`,
    ]);
    expect(stderr).toBe('');
  });
});
