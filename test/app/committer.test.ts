import { describe, expect, it } from 'vitest';
import { type CommitterLimits, createCommitter, defaultCommitterLimits } from '../../src/app/Committer.js';
import { Unavailable } from '../../src/domain/errors.js';
import type { Batch, StoreShape } from '../../src/ports/Store.js';
import { submitCommand } from '../support/commands.js';
import { type MemoryStore, openStoreOf } from '../support/testStore.js';

const reqIdOf = (n: number) => `req_${String(n).padStart(6, '0')}`;

/** A store (the committer's behaviour is the same on each), watched: every batch it is given is recorded, and commits wait for `open()` if held. */
const watched = (store: StoreShape) => {
  const batches: Batch[] = [];
  let gate: Promise<void> = Promise.resolve();
  let release = () => {};
  let failNext = false;
  const watching: StoreShape = {
    ...store,
    commit: async (batch) => {
      batches.push(batch);
      await gate;
      if (failNext) {
        failNext = false;
        throw new Error('injected I/O failure');
      }
      return store.commit(batch);
    },
  };
  return {
    store: watching,
    batches,
    hold: () => {
      gate = new Promise((resolve) => (release = resolve));
    },
    open: () => release(),
    failNextCommit: () => {
      failNext = true;
    },
  };
};

const settled = async <A>(promise: Promise<A>) => {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
};

describe('The committer (one durable write per batch of commands)', () => {
  let store: MemoryStore;
  const setUp = (limits: Partial<CommitterLimits> = {}) => {
    store = openStoreOf('memory');
    const watch = watched(store);
    return { ...watch, committer: createCommitter(watch.store, { ...defaultCommitterLimits, ...limits }) };
  };

  it('commits the commands sent in one event-loop turn as one batch', async () => {
    const { committer, batches } = setUp();
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, n) => committer.send(submitCommand(reqIdOf(n)))));
    expect(batches.map((batch) => batch.commands.length)).toEqual([50]);
    expect(outcomes.map((outcome) => ('events' in outcome ? outcome.events[0]?.seq : outcome))).toEqual(
      Array.from({ length: 50 }, (_, n) => n + 1),
    );
  });

  it('answers a caller only once its own batch is durable, and hands over at most two batches, queueing the rest', async () => {
    const { committer, batches, hold, open } = setUp();
    hold();
    const turn = () => new Promise((resolve) => setImmediate(resolve));
    const first = committer.send(submitCommand(reqIdOf(1)));
    await turn();
    // While the first batch is being committed, the next one is written behind it.
    const second = committer.send(submitCommand(reqIdOf(2)));
    const third = committer.send(submitCommand(reqIdOf(3)));
    await turn();
    // With two batches in flight, what comes now waits in the queue.
    const fourth = committer.send(submitCommand(reqIdOf(4)));
    for (const pending of [first, second, third, fourth]) expect(await settled(pending)).toBe(false);
    expect(batches.map((batch) => batch.commands.length)).toEqual([1, 2]);
    open();
    await Promise.all([first, second, third, fourth]);
    expect(batches.map((batch) => batch.commands.length)).toEqual([1, 2, 1]);
    expect(await store.reads.lastSeq()).toBe(4);
  });

  it('bounds each batch by its count of commands and by the bytes of text it carries', async () => {
    const counted = setUp({ maxBatch: 10 });
    await Promise.all(Array.from({ length: 25 }, (_, n) => counted.committer.send(submitCommand(reqIdOf(n)))));
    expect(counted.batches.map((batch) => batch.commands.length)).toEqual([10, 10, 5]);

    const sized = setUp({ maxBatchBytes: 3 * 3_000 });
    const prompt = 'x'.repeat(1_000);
    await Promise.all(
      Array.from({ length: 7 }, (_, n) => sized.committer.send(submitCommand(reqIdOf(n), 1_000, { prompt: prompt }))),
    );
    expect(sized.batches.map((batch) => batch.commands.length)).toEqual([3, 3, 1]);
  });

  it('refuses API submits with Unavailable when its queue is full, still queues internal commands, and loses nothing it accepted', async () => {
    const { committer, hold, open } = setUp({ maxQueued: 5 });
    hold();
    const first = committer.send(submitCommand(reqIdOf(0)), { fromApi: true });
    await new Promise((resolve) => setImmediate(resolve));
    const accepted = Array.from({ length: 5 }, (_, n) =>
      committer.send(submitCommand(reqIdOf(n + 1)), { fromApi: true }),
    );
    const refused = await committer.send(submitCommand(reqIdOf(6)), { fromApi: true });
    expect(refused).toBeInstanceOf(Unavailable);
    expect((refused as Unavailable).retryAfterSeconds).toBeGreaterThanOrEqual(1);
    const internal = committer.send(submitCommand(reqIdOf(7)));
    open();
    const outcomes = await Promise.all([first, ...accepted, internal]);
    expect(outcomes.every((outcome) => 'events' in outcome)).toBe(true);
    expect(await store.reads.request('req_000006')).toBeUndefined();
    expect(await store.reads.lastSeq()).toBe(7);
  });

  it("puts the workers' commands ahead of the API's in each batch: an outcome waits for at most the batch in flight", async () => {
    const { committer, batches, hold, open } = setUp({ maxBatch: 10 });
    hold();
    const first = committer.send(submitCommand(reqIdOf(0)), { fromApi: true });
    await new Promise((resolve) => setImmediate(resolve));
    // While the first batch is committed: 30 API submits, then 3 internal commands (a worker's claim or outcome).
    const api = Array.from({ length: 30 }, (_, n) => committer.send(submitCommand(reqIdOf(n + 1)), { fromApi: true }));
    const internal = Array.from({ length: 3 }, (_, n) => committer.send(submitCommand(reqIdOf(100 + n))));
    open();
    await Promise.all([first, ...api, ...internal]);
    const ids = batches.map((batch) => batch.commands.map((command) => ('reqId' in command ? command.reqId : '')));
    expect(ids.map((batch) => batch.length)).toEqual([1, 10, 10, 10, 3]);
    // The batch after the one in flight starts with the three internal commands, then takes API submits in order.
    expect(ids[1]?.slice(0, 4)).toEqual(['req_000100', 'req_000101', 'req_000102', 'req_000001']);
    expect(ids.slice(2).flat()).not.toContain('req_000100');
  });

  it('fails every caller of a batch whose write fails, acknowledges none of them, and goes on with the next batch', async () => {
    const { committer, failNextCommit } = setUp();
    failNextCommit();
    const failed = await Promise.allSettled([
      committer.send(submitCommand(reqIdOf(1))),
      committer.send(submitCommand(reqIdOf(2))),
    ]);
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    expect(await store.reads.lastSeq()).toBe(0);
    const next = await committer.send(submitCommand(reqIdOf(3)));
    expect('events' in next).toBe(true);
  });

  it('drains: everything queued before the drain is committed when it resolves', async () => {
    const { committer } = setUp();
    const sent = Array.from({ length: 20 }, (_, n) => committer.send(submitCommand(reqIdOf(n))));
    await committer.drain();
    expect(await Promise.all(sent.map(settled))).toEqual(sent.map(() => true));
    expect(committer.pending()).toBe(0);
  });
});
