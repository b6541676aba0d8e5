import { createReadStream, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { type FakeReplica, startFakeReplica } from '../support/fakeReplica.js';
import { fleetConfig, fleetModel, logOf, serveFleet } from '../support/fleet.js';
import { fileSandboxes, type ServerProcess, sleep } from '../support/processes.js';

/**
 * Issue 41, a model with no upstream in service holds its work: a batch (the official `openai` SDK's Files and
 * Batches APIs through `airs serve`) sent while its model's only upstream is down is neither failed line by line nor
 * ended; once the upstream is back on its port, every line runs and the batch completes with none failed.
 */

const newBox = fileSandboxes();
const replicas: FakeReplica[] = [];
const servers: ServerProcess[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop('SIGKILL');
  for (const replica of replicas.splice(0)) await replica.close();
});

const lines = 12;

describe('a batch while its model’s only upstream is down (issue 41)', { timeout: 150_000 }, () => {
  it('completes a batch sent while the only upstream was down once it is back, with no line failed', async () => {
    const replica = await startFakeReplica({ name: 'only', places: 4 });
    replicas.push(replica);
    const box = newBox('airs-fleet-batch');
    const { server, key, url } = await serveFleet(box, fleetConfig([fleetModel('solo', [{ replica, places: 4 }])]));
    servers.push(server);
    // Down as a restarting vLLM is: nothing listens on its port.
    await replica.kill();

    const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });
    const path = join(box.dir, 'lines.jsonl');
    writeFileSync(
      path,
      Array.from({ length: lines }, (_, i) =>
        JSON.stringify({
          custom_id: `line-${i}`,
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: 'solo', messages: [{ role: 'user', content: `held line ${i}` }] },
        }),
      ).join('\n'),
    );
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });

    // Long enough for every line to have been tried and, without holding, spent its attempts.
    await sleep(8_000);
    const waiting = await client.batches.retrieve(batch.id);
    expect(waiting.status, logOf(server)).toBe('in_progress');
    expect(waiting.request_counts?.failed).toBe(0);

    await replica.restart();
    const deadline = Date.now() + 90_000;
    let ended = waiting;
    while (!['completed', 'failed', 'expired', 'cancelled'].includes(ended.status) && Date.now() < deadline) {
      await sleep(250);
      ended = await client.batches.retrieve(batch.id);
    }
    expect(ended.status, logOf(server)).toBe('completed');
    expect(ended.request_counts).toMatchObject({ total: lines, completed: lines, failed: 0 });
    const output = await (await client.files.content(ended.output_file_id as string)).text();
    const answers = output
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { custom_id: string; response: { status_code: number } });
    expect(answers.map((answer) => answer.response.status_code)).toEqual(answers.map(() => 200));
    expect(new Set(answers.map((answer) => answer.custom_id)).size).toBe(lines);
    expect(replica.stats().answered).toBe(lines);
  });
});
