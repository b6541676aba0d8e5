import { describe, expect, it } from 'vitest';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import {
  allFiles,
  type ChatLine,
  chatLines,
  createBatch,
  customIdCounts,
  linesOfFile,
  pollBatch,
  sendUpload,
  startBatchServer,
  streamedUpload,
  untilEnded,
  uploadLines,
  withStore,
} from '../support/batchServer.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import { fileSandboxes, runCli, sleep } from '../support/processes.js';

/**
 * Batches through a real `airs serve` on LMDB killed with SIGKILL at each stage of a batch's life (contract 16,
 * "Durability"): mid-upload, while validating, while lines run, while finalizing; then restarted on the same data
 * directory. Whatever was acknowledged is kept, no line runs beyond the attempt rules (counted in upstream calls),
 * and the output files are complete (each custom_id exactly once). `processing.leaseSeconds: 2`, so that the batch's
 * and its lines' leases, held by the killed process, lapse soon after the restart.
 */

const newBox = fileSandboxes();

/** The batch as the log left it at the kill (the server is dead): its status and lines ended. */
const batchAtKill = (dataDir: string, batchId: string) =>
  withStore(dataDir, async (store) => {
    const view = await store.reads.batch(batchId);
    return { status: view?.state.status, ended: (view?.counts.completed ?? 0) + (view?.counts.failed ?? 0) };
  });

/** `airs replay --verify`: every view rebuilt from the log is the one stored, and each file's bytes are its log's. */
const verified = async (box: Parameters<typeof runCli>[0]) => {
  const result = await runCli(box, ['replay', '--verify'], { timeoutMs: 60_000 });
  return { code: result.code, said: `${result.stdout}${result.stderr}`.slice(-2_000) };
};

describe('a batch server killed with SIGKILL and restarted on the same data directory', { timeout: 120_000 }, () => {
  it('keeps no file of an upload cut by the kill, leaves its bytes named by no file, and takes a new upload', async () => {
    const served = await startBatchServer(newBox, 'batch-kill-upload', {
      models: [{ id: 'echo', provider: 'echo' }],
      processing: { concurrency: 4, leaseSeconds: 2 },
    });
    // 30 MB on its way; the body stops after 20 MB were read from it (by the socket, then the server), and waits.
    const upload = streamedUpload(30_000_000, { holdAfter: 20_000_000 });
    const answer = sendUpload(served.server.url, served.key, upload);
    await upload.held;
    await served.stop('SIGKILL');
    upload.release();
    expect(await answer).toBeInstanceOf(Error);

    // What the kill left: bytes of the upload's blob, which no file names (swept once an hour old).
    const left = await withStore(served.box.dataDir, async (store) => {
      const blobs = [];
      for await (const blob of store.files.list()) blobs.push(blob.blobId);
      return Promise.all(
        blobs.map(async (blobId) => ({
          named: (await store.reads.file(blobId)) !== undefined,
          bytes: (await store.files.digest(blobId))?.bytes ?? 0,
        })),
      );
    });
    expect(left).toHaveLength(1);
    expect(left[0]?.named).toBe(false);
    expect(left[0]?.bytes).toBeLessThan(30_000_000);
    expect(await verified(served.box)).toMatchObject({ code: 0 });

    await served.restart();
    expect(await allFiles(served.client)).toEqual([]);
    // It serves: a new upload is a file, and a batch of it runs.
    const file = await uploadLines(served, 'after', chatLines(3, 'echo', 'after'));
    expect((await allFiles(served.client)).map((each) => each.id)).toEqual([file.id]);
    const ended = await untilEnded(served.client, (await createBatch(served.client, file.id)).id);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    await served.stop();
  });

  it('validates a batch again after a kill mid-validation and runs each of its lines once', async () => {
    const lines = 5_000;
    const served = await startBatchServer(newBox, 'batch-kill-validating', {
      models: [{ id: 'echo', provider: 'echo' }],
      processing: { concurrency: 64, leaseSeconds: 2 },
      batches: { maxLines: lines },
    });
    // Lines of some 300 bytes, so that validating them (each checked as its route checks it) takes a moment.
    const file = await uploadLines(served, 'validating', chatLines(lines, 'echo', 'v', ` ${'y'.repeat(200)}`));
    const batchId = (await createBatch(served.client, file.id)).id;
    // Killed once the server took the batch (its lease is in the log) and while it still validates.
    const atKill = await withStore(served.box.dataDir, async (store) => {
      for (;;) {
        const view = await store.reads.batch(batchId);
        if (view?.state.status !== 'validating') return view?.state.status;
        if (view.state.context.owner !== undefined) {
          await served.stop('SIGKILL');
          return (await store.reads.batch(batchId))?.state.status;
        }
        await sleep(10);
      }
    });
    expect(atKill).toBe('validating');

    await served.restart();
    const ended = await untilEnded(served.client, batchId);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: lines, completed: lines, failed: 0 });
    expect(ended.error_file_id).toBeNull();
    const output = await linesOfFile(served.client, ended.output_file_id);
    expect(output).toHaveLength(lines);
    const counts = customIdCounts(output);
    expect(counts.size).toBe(lines);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    await served.stop();
    // Validated twice, started once: one BatchStarted, one RequestQueued per line.
    const events = await withStore(served.box.dataDir, async (store) => {
      const seen = new Map<string, number>();
      for await (const event of store.reads.events())
        if (event.type === 'BatchStarted' || event.type === 'RequestQueued')
          seen.set(event.type, (seen.get(event.type) ?? 0) + 1);
      return seen;
    });
    expect(events.get('BatchStarted')).toBe(1);
    expect(events.get('RequestQueued')).toBe(lines);
  });

  it('runs every line after a kill while lines run, none called beyond the attempt bound, each in one file once', async () => {
    // Each upstream call takes 200 ms: a kill finds calls in flight.
    const upstream = await startFakeOpenAi({ delayMs: 200 });
    try {
      const concurrency = 4;
      const maxAttempts = 2;
      const served = await startBatchServer(newBox, 'batch-kill-running', {
        models: [{ id: 'llm', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'tiny', maxRetries: 0 }],
        processing: { concurrency, maxAttempts, leaseSeconds: 2 },
      });
      const total = 24;
      const lines = chatLines(total, 'llm', 'run');
      const file = await uploadLines(served, 'running', lines);
      const batchId = (await createBatch(served.client, file.id)).id;
      const atKill = await pollBatch(served.client, batchId, (batch) => (batch.request_counts?.completed ?? 0) >= 4, {
        everyMs: 20,
      });
      await served.stop('SIGKILL');
      expect(atKill.status).toBe('in_progress');
      // The kill came while lines ran: some had ended, not all.
      const killed = await batchAtKill(served.box.dataDir, batchId);
      expect(killed.status).toBe('in_progress');
      expect(killed.ended).toBeGreaterThanOrEqual(4);
      expect(killed.ended).toBeLessThan(total);
      const calledAtKill = lines.filter((line) => upstream.calls(promptOf(line)) > 0).length;

      await served.restart();
      const ended = await untilEnded(served.client, batchId);
      expect(ended.status).toBe('completed');
      const counts = ended.request_counts ?? { total: 0, completed: 0, failed: 0 };
      expect(counts.total).toBe(total);
      expect(counts.completed + counts.failed).toBe(total);
      // One kill cuts at most one attempt of a line: the second completes it.
      expect(counts.completed).toBe(total);
      const output = await linesOfFile(served.client, ended.output_file_id);
      const errors = await linesOfFile(served.client, ended.error_file_id);
      expect(output).toHaveLength(counts.completed);
      expect(errors).toHaveLength(counts.failed);
      const perLine = customIdCounts([...output, ...errors]);
      expect(perLine.size).toBe(total);
      expect([...perLine.values()].every((count) => count === 1)).toBe(true);
      for (const line of output)
        expect(line.response.body.choices[0].message.content).toBe(
          `upstream says: ${promptOf(lines.find((each) => each.custom_id === line.custom_id) as ChatLine)}`,
        );

      // Attempt rules: no line is called more than maxAttempts times; only a line in flight at the kill (at most
      // one per worker) is called again; every line was called.
      const calls = lines.map((line) => upstream.calls(promptOf(line)));
      expect(Math.max(...calls)).toBeLessThanOrEqual(maxAttempts);
      expect(Math.min(...calls)).toBeGreaterThanOrEqual(1);
      expect(calls.filter((count) => count > 1).length).toBeLessThanOrEqual(concurrency);
      expect(calledAtKill).toBeLessThan(total);
      await served.stop();
    } finally {
      await upstream.close();
    }
  });

  it('ends a batch killed while finalizing with complete files and exactly one output file', async () => {
    const lines = 1_000;
    const served = await startBatchServer(newBox, 'batch-kill-finalizing', {
      models: [{ id: 'echo', provider: 'echo' }],
      processing: { concurrency: 64, leaseSeconds: 2 },
    });
    // Answers of some 8 KB (echo answers the prompt): writing the 8 MB output file takes a moment.
    const file = await uploadLines(served, 'finalizing', chatLines(lines, 'echo', 'f', ` ${'z'.repeat(8_000)}`));
    const batchId = (await createBatch(served.client, file.id)).id;
    const atKill = await pollBatch(served.client, batchId, (batch) => batch.status === 'finalizing', {
      everyMs: 10,
    });
    await served.stop('SIGKILL');
    expect(atKill.status).toBe('finalizing');
    // The kill came before the batch ended: it is still finalizing in the log.
    expect((await batchAtKill(served.box.dataDir, batchId)).status).toBe('finalizing');

    await served.restart();
    const ended = await untilEnded(served.client, batchId);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: lines, completed: lines, failed: 0 });
    expect(ended.error_file_id).toBeNull();
    const output = await linesOfFile(served.client, ended.output_file_id);
    const counts = customIdCounts(output);
    expect(counts.size).toBe(lines);
    expect([...counts.values()].every((count) => count === 1)).toBe(true);
    // One output file, the batch's: whatever the killed finalizer wrote names no file.
    const outputs = (await allFiles(served.client)).filter((each) => each.purpose === 'batch_output');
    expect(outputs.map((each) => each.id)).toEqual([ended.output_file_id]);
    await served.stop();
    // What the killed finalizer wrote named no file; the file made names bytes of its size and SHA-256.
    expect(await verified(served.box)).toMatchObject({ code: 0 });
  });

  it('ends a batch past its shortened window as expired: lines run are in the output, the rest were never started', async () => {
    const served = await startBatchServer(newBox, 'batch-expiry', {
      models: [{ id: 'slowish', provider: 'echo', delayMs: 700 }],
      processing: { concurrency: 1, leaseSeconds: 2 },
      batches: { windowSeconds: 2 },
    });
    const total = 8;
    const file = await uploadLines(served, 'expiry', chatLines(total, 'slowish', 'exp'));
    const batchId = (await createBatch(served.client, file.id)).id;
    const ended = await untilEnded(served.client, batchId);
    expect(ended.status).toBe('expired');
    expect(ended.expired_at).not.toBeNull();
    expect(ended.completed_at).toBeNull();
    const counts = ended.request_counts ?? { total: 0, completed: 0, failed: 0 };
    expect(counts.total).toBe(total);
    expect(counts.completed + counts.failed).toBe(total);
    // 700 ms a line, one at a time, a 2 s window: some lines ran, not all.
    expect(counts.completed).toBeGreaterThanOrEqual(1);
    expect(counts.failed).toBeGreaterThanOrEqual(1);
    const output = await linesOfFile(served.client, ended.output_file_id);
    const errors = await linesOfFile(served.client, ended.error_file_id);
    expect(output).toHaveLength(counts.completed);
    expect(errors).toHaveLength(counts.failed);
    expect(output.every((line) => line.response.status_code === 200 && line.error === null)).toBe(true);
    for (const line of errors) {
      expect(line.response).toBeNull();
      expect(line.error.code).toBe('batch_expired');
    }
    const perLine = customIdCounts([...output, ...errors]);
    expect(perLine.size).toBe(total);
    expect([...perLine.values()].every((count) => count === 1)).toBe(true);
    await served.stop();
    // The expired lines were never started (no attempt), as the log's views hold them.
    const attempts = await withStore(served.box.dataDir, (store) =>
      Promise.all(
        errors.map(async (line) => {
          const number = Number(String(line.custom_id).slice('exp-'.length)) + 1;
          return (await store.reads.request(lineRequestId(batchId, number)))?.context.attempts;
        }),
      ),
    );
    expect(attempts).toEqual(errors.map(() => 0));
  });
});

const promptOf = (line: ChatLine) => line.body.messages[0]?.content ?? '';
