import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { chatLines } from '../support/batchServer.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  type ApiError,
  cliJson,
  createAccountWithKey,
  fileSandboxes,
  type ServerProcess,
  sleep,
  startServer,
  submit,
} from '../support/processes.js';

/**
 * Issue 41, "a batch never locks its own account out": a free account's batch lines do not count in its plan's
 * `maxQueued` (its interactive calls keep answering while the batch runs), and a submit refused for a full queue says
 * how many requests the account has, beside what its plan allows. Against a real `airs serve` on LMDB and a slow fake
 * OpenAI-compatible upstream, through the official SDK.
 */

const newBox = fileSandboxes();
const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

const maxQueued = 5;
const lines = 60;

type ShownBatch = { lines: { queued: number; pending: number; completed: number } };

describe("A free account's batch and its interactive calls", { timeout: 120_000 }, () => {
  it("answers an interactive chat completion of the account while its batch has more lines queued than the plan's maxQueued, and refuses a submit beyond the bound once interactive requests fill it, giving their count", async () => {
    const upstream = await startFakeOpenAi({ delayMs: 1_500 });
    cleanups.push(() => upstream.close());
    const box = newBox('airs-batch-queue-bound');
    const configOf = (bound: number) => ({
      models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', timeoutMs: 60_000 }],
      plans: { free: { maxQueued: bound } },
      processing: { concurrency: 4 },
      pollIntervalSeconds: 1,
    });
    box.writeConfig(configOf(maxQueued));
    const { key } = await createAccountWithKey(box, 'bulk@example.com', 'free');
    let server: ServerProcess = await startServer(box);
    cleanups.push(() => server.stop('SIGKILL'));
    const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 0 });

    const file = await client.files.create({
      file: new File(
        [
          `${chatLines(lines, 'llm', 'line')
            .map((line) => JSON.stringify(line))
            .join('\n')}\n`,
        ],
        'b.jsonl',
      ),
      purpose: 'batch',
    });
    const batch = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    // The batch's lines are queued as requests, more of them not ended than the plan's bound.
    const shown = () => cliJson<ShownBatch>(box, ['batches', 'show', batch.id]);
    let seen = await shown();
    for (let i = 0; i < 100 && seen.lines.pending <= maxQueued; i++) {
      await sleep(100);
      seen = await shown();
    }
    expect(seen.lines.pending).toBeGreaterThan(maxQueued);

    // The account's own interactive call answers meanwhile.
    const answer = await client.chat.completions.create({
      model: 'llm',
      messages: [{ role: 'user', content: 'me too' }],
    });
    expect(answer.choices[0]?.message.content).toBe('upstream says: me too');
    // ... while the batch still runs (its lines take about 20 s: four at a time, 1.5 s each).
    expect((await shown()).lines.completed).toBeLessThan(lines);

    // Interactive requests that never end fill the bound exactly; the one beyond is refused, naming the count.
    for (let i = 0; i < maxQueued; i++) expect((await submit(server.url, key, 'llm', 'hang')).status).toBe(202);
    const full = await submit(server.url, key, 'llm', 'hang');
    expect(full.status).toBe(429);
    expect((full.body as ApiError).error).toMatchObject({
      code: 'rate_limited',
      message: `the queue is full: this account already has ${maxQueued} requests waiting or being processed (the free plan allows ${maxQueued}); wait for some to finish (or cancel some) and retry`,
    });
    expect((await shown()).lines.pending).toBeGreaterThan(0);

    // The operator lowers the bound and starts the server again: the account keeps its five, and a refusal now gives
    // its count beside the lower bound.
    await server.stop('SIGKILL');
    box.writeConfig(configOf(3));
    server = await startServer(box);
    const lowered = await submit(server.url, key, 'llm', 'hang');
    expect(lowered.status).toBe(429);
    expect((lowered.body as ApiError).error.message).toBe(
      `the queue is full: this account already has ${maxQueued} requests waiting or being processed (the free plan allows 3); wait for some to finish (or cancel some) and retry`,
    );
  });
});
