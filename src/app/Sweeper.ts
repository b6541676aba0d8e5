import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Schedule from 'effect/Schedule';
import type { Logger } from 'pino';
import { isRefusal } from '../domain/commands.js';
import { AppClock, type ClockShape } from '../ports/Clock.js';
import { Log } from '../ports/Logger.js';
import { StorageFault, Store, type StoreShape } from '../ports/Store.js';
import { Committer, type CommitterShape } from './Committer.js';

export interface SweeperShape {
  /** Expires every request whose time is up, and cancels those whose deadline passed; returns how many. */
  sweep(): Promise<number>;
}

export class Sweeper extends Context.Service<Sweeper, SweeperShape>()('airs/Sweeper') {}

const batchSize = 1_000;

/**
 * Appends `RequestExpired` for requests past their expiry time (which deletes their prompt and response). Reads
 * answer 404 from the expiry time on regardless; the sweeper only makes the log and storage catch up. A queued or
 * running request past its deadline (`Cancel-After`) is cancelled with reason `deadline` (the same index holds it by
 * its deadline; `TimeUp` lets the machine say which it is): the process running it hears the cancel and aborts its
 * call, as it does for any cancel.
 */
export const createSweeper = (
  store: StoreShape,
  committer: CommitterShape,
  clock: ClockShape,
  log: Logger,
): SweeperShape => ({
  sweep: async () => {
    let total = 0;
    for (;;) {
      const now = clock.now();
      const due = await store.reads.dueForExpiry(now, batchSize);
      if (due.length === 0) return total;
      // Sent in one turn: one batch, one durable write for all of them.
      const outcomes = await Promise.all(due.map((reqId) => committer.send({ type: 'TimeUp', reqId, now })));
      const refused = outcomes.filter(isRefusal);
      for (const refusal of refused) log.error({ reason: refusal.message }, 'expiry or deadline refused');
      total += outcomes.filter((outcome) => 'events' in outcome && outcome.events.length > 0).length;
      // A full batch may mean more are due; a refused one would come back forever, so stop on any refusal.
      if (due.length < batchSize || refused.length > 0) return total;
    }
  },
});

/**
 * The server's sweeper: a sweep every `intervalMs` (the first one interval after the start), on Effect's clock, as one
 * fiber of the layer's scope. Sweeps never overlap: one that takes longer than the interval is followed at once by the
 * next (`Schedule.fixed`). A sweep is not interrupted: closing the layer waits for the one running then, so its writes
 * reach the committer before the committer stops.
 */
export const SweeperLayer = (intervalMs = 1_000) =>
  Layer.effect(
    Sweeper,
    Effect.gen(function* () {
      const sweeper = createSweeper(yield* Store, yield* Committer, yield* AppClock, yield* Log);
      const log = yield* Log;
      const sweepOnce = Effect.promise(() =>
        sweeper.sweep().catch((error: unknown) => {
          // A disk that fails is said once, by StorageHealth; the sweep simply runs again on the next tick.
          if (error instanceof StorageFault) log.debug({ reason: error.message }, 'sweep paused: write failed');
          else log.error({ err: error }, 'sweep failed');
        }),
      );
      yield* Effect.forkScoped(Effect.schedule(Effect.uninterruptible(sweepOnce), Schedule.fixed(intervalMs)));
      return Sweeper.of(sweeper);
    }),
  );
