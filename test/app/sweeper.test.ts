import { Effect, Exit, Layer, Scope } from 'effect';
import { TestClock } from 'effect/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { Committer, createCommitter } from '../../src/app/Committer.js';
import { SweeperLayer } from '../../src/app/Sweeper.js';
import { AppClock, ManualClock } from '../../src/ports/Clock.js';
import { Log, silentLogger } from '../../src/ports/Logger.js';
import { Store, type StoreShape } from '../../src/ports/Store.js';
import { createAccount, submit } from '../contract/fixtures.js';
import { openStoreOf } from '../support/testStore.js';

/**
 * The server's sweeper as its layer runs it: on Effect's clock (TestClock here, so no test waits for a tick), over the
 * memory store. The store's commits can be held back, to see what the sweeper does while a sweep is still writing.
 */

const intervalMs = 1_000;
const expiresAt = 61_000; // The fixtures' submit: now 1,000, ttl 60 s.

/** A pause of real time, for the sweeper's writes to reach the store when nothing holds them. */
const settle = () => new Promise((resolve) => setTimeout(resolve, 30));

const setUp = async () => {
  const store = openStoreOf('memory');
  await store.commit({ commands: [createAccount(1), submit('req_a')] });
  const clock = new ManualClock(expiresAt);
  let held: (() => void)[] | undefined;
  let expiryReads = 0;
  /** The store, counting the sweeper's reads of what is due, and holding commits back while `held` is set. */
  const observed: StoreShape = {
    ...store,
    reads: {
      ...store.reads,
      dueForExpiry: (now, limit) => {
        expiryReads++;
        return store.reads.dueForExpiry(now, limit);
      },
    },
    commit: async (batch) => {
      if (held !== undefined) await new Promise<void>((release) => held?.push(release));
      return store.commit(batch);
    },
  };
  const releaseCommits = () => {
    const waiting = held ?? [];
    held = undefined;
    for (const release of waiting) release();
  };
  const committer = createCommitter(observed);
  const scope = Effect.runSync(Scope.make());
  const layer = SweeperLayer(intervalMs).pipe(
    Layer.provide(
      Layer.mergeAll(
        Layer.succeed(Store, observed),
        Layer.succeed(Committer, committer),
        Layer.succeed(AppClock, clock),
        Layer.succeed(Log, silentLogger()),
      ),
    ),
    Layer.provideMerge(TestClock.layer()),
  );
  const context = await Effect.runPromise(Layer.buildWithScope(layer, scope));
  const run = <A>(effect: Effect.Effect<A>) => Effect.runPromise(Effect.provide(effect, context));
  return {
    status: () => store.syncReads.request('req_a')?.status,
    expiryReads: () => expiryReads,
    /** Moves Effect's clock on: the sweeper's ticks that fall due run. */
    advance: (ms: number) => run(TestClock.adjust(ms)),
    holdCommits: () => {
      held = [];
    },
    releaseCommits,
    close: () => Effect.runPromise(Scope.close(scope, Exit.void)),
    /** Ends the test's sweeper and committer, whatever it left held. */
    stop: async () => {
      releaseCommits();
      await Effect.runPromise(Scope.close(scope, Exit.void));
      await committer.stop();
    },
  };
};

describe('The sweeper layer', () => {
  let stop: (() => Promise<unknown>) | undefined;
  afterEach(async () => {
    await stop?.();
    stop = undefined;
  });

  it('sweeps one interval after it starts and every interval after, not at once', async () => {
    const sweeper = await setUp();
    stop = sweeper.stop;
    await settle();
    expect(sweeper.expiryReads()).toBe(0);
    expect(sweeper.status()).toBe('waiting');

    await sweeper.advance(intervalMs - 1);
    await settle();
    expect(sweeper.expiryReads()).toBe(0);

    await sweeper.advance(1);
    await settle();
    expect(sweeper.status()).toBe('expired');
    expect(sweeper.expiryReads()).toBe(1);

    await sweeper.advance(intervalMs);
    await settle();
    expect(sweeper.expiryReads()).toBe(2);
    await sweeper.close();
  });

  it('never starts a sweep while the last one is still writing, and closing it waits for that sweep', async () => {
    const sweeper = await setUp();
    stop = sweeper.stop;
    sweeper.holdCommits();
    await sweeper.advance(intervalMs);
    await settle();
    expect(sweeper.expiryReads()).toBe(1);

    // Three intervals pass while the first sweep's write is held: no second sweep reads what is due meanwhile.
    await sweeper.advance(3 * intervalMs);
    await settle();
    expect(sweeper.expiryReads()).toBe(1);

    let closed = false;
    const closing = sweeper.close().then(() => {
      closed = true;
    });
    await settle();
    expect(closed).toBe(false);
    expect(sweeper.status()).toBe('waiting');

    sweeper.releaseCommits();
    await closing;
    expect(sweeper.status()).toBe('expired');
    expect(sweeper.expiryReads()).toBe(1);
  });
});
