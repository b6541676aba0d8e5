import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { describeFigures, watchBystander, watchFor } from '../support/bystander.js';
import { createAccountWithKey, fileSandboxes, type ServerProcess, startServer } from '../support/processes.js';

/**
 * Issue 40, finding 5, replayed through `airs serve` (LMDB) and the official `openai` SDK: a few accounts hold more
 * open batches than one tick of the batch runner used to read (it read the 1,000 oldest, in id order), each waiting
 * on a model that never answers within the test. Another account then creates a small batch while a bystander
 * account submits. Before, the new batch was never looked at (it stayed `validating`: more than 60 s where 1 s is
 * normal); now the runner takes the accounts in turn, a bounded number of reads a tick, going on where the last
 * stopped, so the new batch is validated, run and completed.
 *
 * Scaled to seconds: the plan's bound of batches in progress is raised so that three accounts hold 1,020 batches
 * (three files, one line each), and the batches' model answers after ten minutes.
 */

const newBox = fileSandboxes();
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop('SIGKILL');
});

/** Open batches held by the attackers: more than the 1,000 a tick used to read. */
const attackers = 3;
const batchesEach = 340;
/** Creates sent at once per attacker. */
const createsAtOnce = 24;

const chatLine = (model: string, id: string) =>
  JSON.stringify({
    custom_id: id,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: `say ${id}` }] },
  });

describe('Open batches under attack (issue 40, finding 5)', { timeout: 600_000 }, () => {
  it("validates and completes a new account's small batch while other accounts hold 1,020 open batches", async () => {
    const box = newBox('airs-abuse-open-batches');
    box.writeConfig({
      models: [
        { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 },
        // The attackers' lines: two at a time, each answered after ten minutes (the test ends long before).
        { id: 'stuck', provider: 'echo', delayMs: 600_000, timeoutMs: 900_000, maxConcurrency: 2 },
      ],
      plans: { enterprise: { maxBatchesInProgress: 1_000, submitsPerMinute: 1_000_000, pollsPerMinute: 1_000_000 } },
    });
    const accounts = [];
    for (let i = 0; i < attackers; i++)
      accounts.push(await createAccountWithKey(box, `attacker${i}@example.com`, 'enterprise'));
    const newcomer = await createAccountWithKey(box, 'newcomer@example.com', 'free');
    // On a plan whose submit budget (raised above) its ten submits a second never reach.
    const bystander = await createAccountWithKey(box, 'bystander@example.com', 'enterprise');
    const server = await startServer(box);
    servers.push(server);
    const pid = server.child.pid as number;
    const clientOf = (key: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });

    const quiet = await watchFor({ url: server.url, key: bystander.key, pid }, 3_000);
    console.log(describeFigures('bystander, quiet server', quiet));

    // The attack: each attacker's batches over one file of one line on the stuck model.
    const began = performance.now();
    await Promise.all(
      accounts.map(async ({ key }, a) => {
        const client = clientOf(key);
        const path = join(box.dir, `attacker${a}.jsonl`);
        writeFileSync(path, `${chatLine('stuck', `a${a}`)}\n`);
        const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
        let made = 0;
        await Promise.all(
          Array.from({ length: createsAtOnce }, async () => {
            while (made < batchesEach) {
              made++;
              await client.batches.create({
                input_file_id: file.id,
                endpoint: '/v1/chat/completions',
                completion_window: '24h',
              });
            }
          }),
        );
      }),
    );
    console.log(
      `attack: ${attackers * batchesEach} batches created in ${((performance.now() - began) / 1000).toFixed(1)} s`,
    );

    // The newcomer's small batch, while the bystander is measured.
    const watch = watchBystander({ url: server.url, key: bystander.key, pid });
    const client = clientOf(newcomer.key);
    const path = join(box.dir, 'newcomer.jsonl');
    writeFileSync(path, `${Array.from({ length: 10 }, (_, i) => chatLine('echo', `n${i}`)).join('\n')}\n`);
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    const created = performance.now();
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    let seen = batch;
    let leftValidatingMs: number | undefined;
    // Generous: never on the code before, as the batch is never looked at there.
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && !['completed', 'failed', 'expired', 'cancelled'].includes(seen.status)) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      seen = await client.batches.retrieve(batch.id);
      if (leftValidatingMs === undefined && seen.status !== 'validating')
        leftValidatingMs = performance.now() - created;
    }
    const doneMs = performance.now() - created;
    // Measured for five seconds at least, the batch's run included.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 5_000 - doneMs)));
    const during = await watch.stop();
    console.log(describeFigures('bystander, during the attack', during));
    console.log(
      `newcomer's batch: ${seen.status}; left validating after ${leftValidatingMs?.toFixed(0) ?? 'never'} ms, ` +
        `ended after ${doneMs.toFixed(0)} ms`,
    );

    expect(seen.status).toBe('completed');
    expect(seen.request_counts).toMatchObject({ total: 10, completed: 10, failed: 0 });
    // The attackers' batches are still open (in progress, their lines waiting on the stuck model).
    const attacker = await clientOf(accounts[0]?.key as string).batches.list({ limit: 5 });
    for (const open of attacker.data) expect(['validating', 'in_progress']).toContain(open.status);
    // The bystander was served throughout: every submit accepted.
    expect(during.refused).toEqual({});
    expect(during.submits).toBeGreaterThan(0);
  });
});
