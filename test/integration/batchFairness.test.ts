import { createReadStream, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { cliJson, createAccountWithKey, fileSandboxes, type ServerProcess, startServer } from '../support/processes.js';

/**
 * Contract 16's fairness, against a real `airs serve`: a batch's lines wait while an interactive request of their
 * model is due, except for the share of the model's workers batches always get (`batches.minShare`). Measured in
 * model calls, not in time: while a 5,000-line batch keeps a slow model's four workers busy, an interactive request
 * waits for at most the lines already running (no new line starts before it); and while interactive traffic keeps
 * every worker busy, the batch still advances on its share.
 */

const newBox = fileSandboxes();
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop('SIGKILL');
});

const workers = 4;
const delayMs = 400;

describe('a batch and interactive traffic on one model', { timeout: 120_000 }, () => {
  it('neither starves the other: interactive requests go before waiting lines, and lines keep their share', async () => {
    const box = newBox('airs-batch-fairness');
    box.writeConfig({
      models: [{ id: 'slow', provider: 'echo', delayMs, timeoutMs: 60_000 }],
      processing: { concurrency: workers },
      batches: { minShare: 0.25 },
    });
    const batchOwner = await createAccountWithKey(box, 'bulk@example.com', 'scale');
    const interactive = await createAccountWithKey(box, 'live@example.com', 'scale');
    const server = await startServer(box);
    servers.push(server);
    const bulk = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: batchOwner.key, maxRetries: 0 });
    const live = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: interactive.key, maxRetries: 0 });

    const path = join(tmpdir(), `fair-${process.pid}-${Date.now()}.jsonl`);
    writeFileSync(
      path,
      Array.from({ length: 5_000 }, (_, i) =>
        JSON.stringify({
          custom_id: `l${i}`,
          method: 'POST',
          url: '/v1/chat/completions',
          body: { model: 'slow', messages: [{ role: 'user', content: `line ${i}` }] },
        }),
      ).join('\n'),
    );
    const file = await bulk.files.create({ file: createReadStream(path), purpose: 'batch' });
    const batch = await bulk.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const completed = async () => (await bulk.batches.retrieve(batch.id)).request_counts?.completed ?? 0;
    // The batch alone has every worker: its lines run four at a time.
    for (let i = 0; i < 200 && (await completed()) < 2 * workers; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await completed()).toBeGreaterThanOrEqual(2 * workers);

    // One interactive request (another account's, then the batch owner's own) takes the first worker that comes
    // free: no new line starts while it waits, where a queue that served lines first would start thousands. Counted in
    // the log (airs replay), by sequence number, not in time: a busy machine may take a while to answer.
    const interactiveIds: string[] = [];
    for (const client of [live, bulk]) {
      const answer = await client.chat.completions.create({
        model: 'slow',
        messages: [{ role: 'user', content: 'me first' }],
      });
      expect(answer.choices[0]?.message.content).toBe('me first');
      interactiveIds.push(`req_${answer.id.slice('chatcmpl-'.length)}`);
    }
    type Replayed = { events: { seq: number; type: string; reqId?: string }[] };
    const lineStarts = (await cliJson<Replayed>(box, ['replay', '--batch', batch.id])).events.filter(
      (event) => event.type === 'RequestProcessingStarted',
    );
    expect(lineStarts.length).toBeGreaterThanOrEqual(2 * workers);
    for (const reqId of interactiveIds) {
      const own = (await cliJson<Replayed>(box, ['replay', '--request', reqId])).events;
      const queued = own.find((event) => event.type === 'RequestQueued')?.seq ?? Number.NaN;
      const started = own.find((event) => event.type === 'RequestProcessingStarted')?.seq ?? Number.NaN;
      expect(started).toBeGreaterThan(queued);
      // A claim decided in the same write as the submit, before it, does not see it yet: at most one line per worker.
      const startedWhileItWaited = lineStarts.filter((event) => event.seq > queued && event.seq < started);
      expect(startedWhileItWaited.length).toBeLessThanOrEqual(workers);
    }

    // Interactive traffic that keeps every worker busy: eight callers, one request after another, for about four
    // seconds. The batch still advances on its share (one worker of four).
    const before = await completed();
    const until = Date.now() + 4_000;
    let answered = 0;
    await Promise.all(
      Array.from({ length: 2 * workers }, async (_, caller) => {
        while (Date.now() < until) {
          await live.chat.completions.create({
            model: 'slow',
            messages: [{ role: 'user', content: `busy ${caller}` }],
          });
          answered++;
        }
      }),
    );
    const advanced = (await completed()) - before;
    expect(answered).toBeGreaterThan(0);
    expect(advanced).toBeGreaterThanOrEqual(2);
    // ... and the interactive callers had the rest: more answers than the batch's share would leave them alone.
    expect(answered).toBeGreaterThan(advanced);

    const cancelled = await bulk.batches.cancel(batch.id);
    expect(['cancelling', 'cancelled']).toContain(cancelled.status);
  });
});
