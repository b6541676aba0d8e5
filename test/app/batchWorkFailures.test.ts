import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import type { Command } from '../../src/domain/commands.js';
import { systemClock } from '../../src/ports/Clock.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { call } from '../support/processes.js';
import { loggedEvents, servedTestApps, type TestApp } from '../support/testApp.js';

/**
 * Issue 40: a step of a batch's housekeeping that fails for a reason waiting does not mend (a bug: here a store that
 * answers one thing with a TypeError) is recorded as the batch's, and after three tries in one step the batch ends
 * `failed` with the reason: nothing is retried forever, whatever step it was in. On the memory store, in real time.
 */

type LogLine = { level: number; msg: string; err?: { stack?: string }; failures?: number };

/** Whether a command is the submit of one of a batch's lines from `fromLine` on. */
const lineSubmitFrom = (command: Command, batchId: () => string | undefined, fromLine: number) =>
  command.type === 'Submit' &&
  command.batchId !== undefined &&
  command.batchId === batchId() &&
  command.reqId >= lineRequestId(command.batchId, fromLine);

describe("a batch whose housekeeping keeps failing (the machine's count of BatchWorkFailed)", () => {
  const startApp = servedTestApps();

  /** An app over the memory store seen through `wrap`, its log kept, served on a socket; an account's key. */
  const start = async (wrap: (store: StoreShape) => StoreShape) => {
    const lines: LogLine[] = [];
    const { app, served } = await startApp({
      clock: systemClock,
      wrapStore: wrap,
      logger: pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) }),
    });
    const { key } = await app.account('enterprise');
    return { app, url: served.url, key, lines };
  };

  const failuresOf = async (running: TestApp, batchId: string) =>
    (await loggedEvents(running)).filter((event) => event.type === 'BatchWorkFailed' && event.batchId === batchId);

  it('fails at validation after three tries, its errors naming the step and the reason, with one stack logged', async () => {
    let failing: string | undefined;
    const {
      app: running,
      url,
      key,
      lines,
    } = await start((store) => ({
      ...store,
      files: {
        ...store.files,
        read: (blobId) => {
          if (blobId !== failing) return store.files.read(blobId);
          return (async function* () {
            yield* [];
            throw new TypeError('the bytes read back are not what was written');
          })();
        },
      },
    }));
    failing = await uploadLines(url, key, chatLines('echo', ['one', 'two']));
    const { id } = await createBatch(url, key, failing);
    const ended = await batchWhen(url, key, id, isEnded, 20_000);
    expect(ended.status).toBe('failed');
    const batch = (await call(url, 'GET', `/v1/batches/${id}`, key)).body;
    expect(batch.failed_at).not.toBeNull();
    expect(batch.errors).toEqual({
      object: 'list',
      data: [
        {
          code: 'batch_failed',
          line: null,
          message:
            'validating its input file failed 3 times; the last time: TypeError: the bytes read back are not what was written',
          param: null,
        },
      ],
    });
    expect((await failuresOf(running, id)).map((event) => event.type)).toEqual([
      'BatchWorkFailed',
      'BatchWorkFailed',
      'BatchWorkFailed',
    ]);
    // A line per failure, the stack once: with the failure that ended the step.
    const failed = lines.filter((line) => line.msg.startsWith('batch work failed'));
    expect(failed.map((line) => [line.level, line.err?.stack !== undefined])).toEqual([
      [40, false],
      [40, false],
      [50, true],
    ]);
    expect(await running.store.reads.openBatches(10)).toEqual([]);
  }, 120_000);

  it('failing while queueing, cancels its waiting lines, lets its running ones finish and ends failed with its files', async () => {
    let batchId: string | undefined;
    const total = 1_500;
    // The store takes the first 1,000 lines (one write) and answers every later one with a TypeError.
    const { url, key } = await start((store) => ({
      ...store,
      commit: async (batch) => {
        const refused = batch.commands.map((command) => lineSubmitFrom(command, () => batchId, 1_001));
        if (!refused.includes(true)) return store.commit(batch);
        const outcomes = await store.commit({ ...batch, commands: batch.commands.filter((_, i) => !refused[i]) });
        let next = 0;
        return refused.map((no) => (no ? new TypeError('the line would not go in') : (outcomes[next++] as never)));
      },
    }));
    const fileId = await uploadLines(
      url,
      key,
      chatLines(
        'echo',
        Array.from({ length: total }, (_, i) => `line ${i}`),
      ),
    );
    batchId = (await createBatch(url, key, fileId)).id;
    const ended = await batchWhen(url, key, batchId, isEnded, 60_000);
    const batch = (await call(url, 'GET', `/v1/batches/${batchId}`, key)).body;
    expect(batch).toMatchObject({ status: 'failed', errors: { data: [{ code: 'batch_failed', line: null }] } });
    expect((batch.errors as { data: { message: string }[] }).data[0]?.message).toBe(
      'queueing its lines failed 3 times; the last time: TypeError: the line would not go in',
    );
    const counts = ended.request_counts;
    expect(counts.total).toBe(total);
    expect(counts.completed + counts.failed).toBe(total);
    // Every line in exactly one of its files: those run in the output, the others in the error file, never run.
    const linesOf = async (fileId: string | null) =>
      fileId === null
        ? []
        : (await fileContent(url, key, fileId))
            .toString('utf8')
            .split('\n')
            .filter((line) => line !== '')
            .map((line) => JSON.parse(line) as { custom_id: string; error: { code: string } | null });
    const output = await linesOf(ended.output_file_id);
    const errors = await linesOf(ended.error_file_id);
    expect(output).toHaveLength(counts.completed);
    expect(errors).toHaveLength(counts.failed);
    expect(new Set([...output, ...errors].map((line) => line.custom_id)).size).toBe(total);
    expect(errors.length).toBeGreaterThanOrEqual(total - 1_000);
    expect(new Set(errors.map((line) => line.error?.code))).toEqual(new Set(['batch_failed']));
  }, 120_000);

  it('failing while its files are written, ends failed without them after three tries, leaving no bytes behind', async () => {
    let batchId: string | undefined;
    const {
      app: running,
      url,
      key,
    } = await start((store) => ({
      ...store,
      reads: {
        ...store.reads,
        // What the output file is written from: its lines' states.
        requests: async (reqIds) => {
          // A line's id is its batch's (`req_` and 28 characters of the batch id), then the line's number.
          const lines = batchId === undefined ? undefined : lineRequestId(batchId, 1).slice(0, 'req_'.length + 28);
          if (lines !== undefined && reqIds.some((reqId) => reqId.startsWith(lines)))
            throw new TypeError('no states today');
          return store.reads.requests(reqIds);
        },
      },
    }));
    const fileId = await uploadLines(url, key, chatLines('echo', ['one', 'two', 'three']));
    batchId = (await createBatch(url, key, fileId)).id;
    const ended = await batchWhen(url, key, batchId, isEnded, 20_000);
    expect(ended).toMatchObject({
      status: 'failed',
      output_file_id: null,
      error_file_id: null,
      request_counts: { total: 3, completed: 3, failed: 0 },
    });
    const batch = (await call(url, 'GET', `/v1/batches/${batchId}`, key)).body as { errors: { data: unknown[] } };
    expect(batch.errors.data).toEqual([
      {
        code: 'batch_failed',
        line: null,
        message: 'writing its output files failed 3 times; the last time: TypeError: no states today',
        param: null,
      },
    ]);
    expect((await failuresOf(running, batchId)).map((event) => (event as { step: string }).step)).toEqual([
      'finalizing',
      'finalizing',
      'finalizing',
    ]);
    // The bytes of the files it began were removed with each failed try: only the input file's are kept.
    const blobs: string[] = [];
    for await (const { blobId } of running.store.files.list()) blobs.push(blobId);
    expect(blobs).toEqual([fileId]);
  }, 120_000);
});
