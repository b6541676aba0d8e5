import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/ports/Clock.js';
import { batchWhen, chatLines, createBatch, isEnded, uploadLines } from '../support/batches.js';
import { call } from '../support/processes.js';
import { eventually, loggedEvents, servedTestApps } from '../support/testApp.js';

/**
 * Issue 40: the operator ends a finalizing batch cancelled (`airs batches cancel` sends `CancelFinalizing`), while a
 * process is writing its files: that finalize is refused its end by the machine, and removes what it wrote. The
 * account's own cancel still answers a finalizing batch as it is (contract 16). On the memory store, in real time.
 */
describe('a finalizing batch cancelled by the operator while its files are being written', () => {
  const startApp = servedTestApps();

  it('ends cancelled without files; the finalize in flight is refused its end and leaves no bytes behind', async () => {
    // The finalize's first read of its lines waits for the test: its files are then begun, not ended.
    let finalizing = false;
    let reachedFinalize = () => {};
    const reached = new Promise<void>((resolve) => {
      reachedFinalize = resolve;
    });
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { app, served } = await startApp({
      clock: systemClock,
      wrapStore: (store) => ({
        ...store,
        reads: {
          ...store.reads,
          requests: async (reqIds) => {
            if (finalizing) {
              finalizing = false;
              reachedFinalize();
              await released;
            }
            return store.reads.requests(reqIds);
          },
        },
      }),
    });
    const { url } = served;
    const { key } = await app.account('enterprise');
    const fileId = await uploadLines(url, key, chatLines('echo', ['one', 'two', 'three']));
    const { id } = await createBatch(url, key, fileId);
    finalizing = true;
    const blobsNow = async () => {
      const blobs: string[] = [];
      for await (const { blobId } of app.store.files.list()) blobs.push(blobId);
      return blobs;
    };
    await reached;
    expect((await app.store.reads.batch(id))?.state.status).toBe('finalizing');
    // Its output file is begun: the input's bytes and the output's.
    expect(await blobsNow()).toHaveLength(2);
    // The account's cancel is answered with the batch as it is.
    const asked = await call(url, 'POST', `/v1/batches/${id}/cancel`, key);
    expect(asked.body.status).toBe('finalizing');
    // The operator's (what `airs batches cancel` sends for a finalizing batch).
    const outcome = await app.committer.send({
      type: 'Batch',
      batchId: id,
      command: { type: 'CancelFinalizing', now: Date.now() },
    });
    expect('events' in outcome && outcome.events.map((event) => event.type)).toEqual(['BatchFinalizingCancelled']);
    release();
    const ended = await batchWhen(url, key, id, isEnded, 30_000);
    expect(ended).toMatchObject({
      status: 'cancelled',
      output_file_id: null,
      error_file_id: null,
      request_counts: { total: 3, completed: 3, failed: 0 },
    });
    // The finalize went on, wrote its output file's bytes, and was refused its end: they were removed.
    await app.batchRunner.idle();
    expect(await eventually(async () => ((await blobsNow()).length === 1 ? blobsNow() : undefined))).toEqual([fileId]);
    const types = (await loggedEvents(app)).flatMap((event) =>
      'batchId' in event && event.batchId === id ? [event.type] : [],
    );
    expect(types).not.toContain('BatchEnded');
    expect(types.at(-1)).toBe('BatchFinalizingCancelled');
  }, 120_000);
});
