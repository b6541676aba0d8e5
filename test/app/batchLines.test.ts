import { describe, expect, it } from 'vitest';
import { defaultConfig, type ModelConfig } from '../../src/config.js';
import { lineRequestId } from '../../src/domain/batch/lines.js';
import { systemClock } from '../../src/ports/Clock.js';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { listen, type TestConfig, testApps } from '../support/testApp.js';

const startApp = testApps();

/** One worker, leases of a second (a stopped server's are taken up soon), one line of a batch queued ahead at a time. */
const configOf = (models: ModelConfig[]): TestConfig => ({
  models,
  processing: { concurrency: 1, leaseSeconds: 1 },
  batches: { ...defaultConfig().batches, maxLinesAhead: 1 },
});

describe("A batch's lines, read from the batch's input file when their attempts start (issue 40)", () => {
  it('ends every line of a batch whose model was removed from the config after validation: each fails for good saying why, and the batch completes with them in its error file', {
    timeout: 30_000,
  }, async () => {
    const gone: ModelConfig = { id: 'gone', provider: 'echo', delayMs: 60_000, timeoutMs: 120_000 };
    const echo: ModelConfig = { id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 };
    const first = await startApp({ clock: systemClock, config: configOf([echo, gone]) });
    let served = await listen(first);
    const account = await first.account('scale');
    const lines = chatLines('gone', ['one', 'two', 'three']);
    const batchId = (await createBatch(served.url, account.key, await uploadLines(served.url, account.key, lines))).id;
    // Validated against the config with the model; then the server restarts without it.
    await batchWhen(served.url, account.key, batchId, (batch) => batch.status === 'in_progress');
    await served.close();
    await first.stop({ keepData: true });
    const second = await startApp({ clock: systemClock, storeOf: first, config: configOf([echo]) });
    served = await listen(second);
    try {
      const ended = await batchWhen(served.url, account.key, batchId, isEnded);
      expect(ended.status).toBe('completed');
      expect(ended.request_counts).toEqual({ total: 3, completed: 0, failed: 3 });
      const errors = (await fileContent(served.url, account.key, ended.error_file_id as string))
        .toString()
        .trim()
        .split('\n')
        .map((text) => JSON.parse(text) as { custom_id: string; response: { body: { error: { message: string } } } });
      expect(errors.map((line) => line.custom_id).sort()).toEqual(['c0', 'c1', 'c2']);
      for (const line of errors)
        expect(line.response.body.error.message).toMatch(/line \d no longer validates: unknown model "gone"/);
      // One attempt each on the second server: no retry mends a line that no longer validates (the first line may
      // have started on the first server, which stopped while it ran).
      const attempts = async (line: number) =>
        (await second.store.reads.request(lineRequestId(batchId, line)))?.context.attempts ?? 0;
      expect(await attempts(1)).toBeLessThanOrEqual(2);
      expect([await attempts(2), await attempts(3)]).toEqual([1, 1]);
    } finally {
      await served.close();
    }
  });
});
