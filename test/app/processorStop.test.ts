import { describe, expect, it } from 'vitest';
import { createCommitter } from '../../src/app/Committer.js';
import type { ModelsShape } from '../../src/app/Models.js';
import { createProcessor } from '../../src/app/processing/Processor.js';
import { defaultRetryPolicy } from '../../src/domain/request/retryPolicy.js';
import { ManualClock } from '../../src/ports/Clock.js';
import { silentLogger } from '../../src/ports/Logger.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { eventually, loggedEvents } from '../support/testApp.js';
import { openStoreOf } from '../support/testStore.js';

/** A model that answers only when its call is aborted. */
const neverAnswers: ModelsShape = {
  ids: () => ['never'],
  get: () => ({
    config: { id: 'never', provider: 'echo', delayMs: 0, timeoutMs: 600_000 },
    provider: {
      generate: ({ signal }) =>
        new Promise((_, reject) => {
          if (signal.aborted) reject(new Error('aborted'));
          signal.addEventListener('abort', () => reject(new Error('aborted')));
        }),
    },
  }),
};

describe('Stopping the worker pool', () => {
  it('starts no model call for work its claim got after the stop, and has given that work back when the stop ends', async () => {
    const memory = openStoreOf('memory');
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    let held = 0;
    // Commits of starts wait at the gate, so the stop comes while a start is being committed.
    const store: StoreShape = {
      ...memory,
      commit: async (batch) => {
        if (batch.commands.some((command) => command.type === 'Claim')) {
          held++;
          await gate;
        }
        return memory.commit(batch);
      },
    };
    const committer = createCommitter(store);
    const clock = new ManualClock();
    const processor = createProcessor({
      store,
      committer,
      models: neverAnswers,
      clock,
      log: silentLogger(),
      concurrency: 1,
      policy: defaultRetryPolicy,
      leaseMs: 30_000,
    });
    try {
      await committer.send({
        type: 'Submit',
        reqId: 'req_stop',
        accountId: 'acct',
        keyId: 'key',
        model: 'never',
        promptChars: 1,
        prompt: 'x',
        ttlMs: 86_400_000,
        now: clock.now(),
      });
      processor.wake();
      await eventually(() => (held > 0 ? true : undefined));
      const stopped = processor.stop();
      release();
      const outcome = await Promise.race([
        stopped.then(() => 'stopped'),
        new Promise((resolve) => setTimeout(() => resolve('still running after 3 s'), 3_000)),
      ]);
      expect(outcome).toBe('stopped');
      // The claim landed after the stop began: the request is given back (waiting again) before the stop ends, not
      // left to its lease (a restart right after would find it processing in a dead process's name).
      expect((await memory.reads.request('req_stop'))?.status).toBe('waiting');
      expect((await loggedEvents({ store: memory })).map((event) => event.type)).toEqual([
        'RequestQueued',
        'RequestProcessingStarted',
        'RequestReleased',
      ]);
    } finally {
      release();
      await committer.stop();
    }
  });
});
