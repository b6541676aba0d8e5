import type { Logger } from 'pino';
import type { Claim } from '../../domain/claim.js';
import { isRefusal } from '../../domain/commands.js';
import type { RequestEvent } from '../../domain/request/events.js';
import type { ClockShape } from '../../ports/Clock.js';
import { StorageFault, type StoreShape } from '../../ports/Store.js';
import type { CommitterShape } from '../Committer.js';
import { hasDueWork, nextDueAt } from './dueWork.js';
import type { Slots } from './slots.js';

/** A request this process now holds: started under its lease, in attempt `attempt`. */
export type Claimed = { readonly reqId: string; readonly attempt: number };

/** How long the dispatcher waits before it looks again after a write failed (the disk may be full for a while). */
const faultRetryMs = 1_000;

/**
 * When to take work, and taking it. A pick (`schedule`) runs at most once per event-loop turn and one claim at a time:
 * it holds every free worker, writes one `Claim` (decided inside the store's write, so no other process takes the
 * same requests), lets go of the workers it did not need, and hands each request it got to `run`. When nothing is due
 * it sets the one timer for the next time something will be (a backoff's end, a lease's end). Whatever can make work
 * due calls `schedule`: a submit that queued, a worker let go, an outcome written, a change by another process.
 */
export const createDispatcher = (deps: {
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly clock: ClockShape;
  readonly slots: Slots;
  readonly log: Logger;
  /** The claim's fields that do not change: owner, lease, model bounds, retry policy. */
  readonly claim: Omit<Claim, 'type' | 'now' | 'max' | 'after'>;
  readonly takesNoWork: () => boolean;
  /** Runs a claimed request (its worker is held for it). */
  readonly run: (claimed: Claimed) => void;
  /** Gives a claimed request back at once (its worker is held for it): the pool stopped taking work meanwhile. */
  readonly giveBack: (claimed: Claimed) => void;
  /** Requests the claim gave up (no attempt left for a lapsed lease): their outcome is durable. */
  readonly gaveUp: (reqId: string) => void;
}) => {
  const { store, committer, clock, slots } = deps;
  let scheduled = false;
  let claiming = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let faultTimer: NodeJS.Timeout | undefined;
  /** The account served last: the next claim starts after it (accounts in turn, across claims). */
  let lastAccount: string | undefined;

  const schedule = () => {
    if (scheduled || deps.takesNoWork()) return;
    scheduled = true;
    setImmediate(pump);
  };

  const wakeAt = (at: number | undefined, now: number) => {
    if (timer !== undefined) clearTimeout(timer);
    timer = at === undefined ? undefined : setTimeout(schedule, Math.max(0, at - now) + 1);
    timer?.unref();
  };

  const wakeAfterFault = () => {
    if (faultTimer !== undefined || deps.takesNoWork()) return;
    faultTimer = setTimeout(() => {
      faultTimer = undefined;
      schedule();
    }, faultRetryMs);
    faultTimer.unref();
  };

  const pump = async () => {
    scheduled = false;
    if (deps.takesNoWork()) return;
    if (claiming) {
      again = true;
      return;
    }
    const free = slots.free();
    if (free <= 0) return;
    const now = clock.now();
    store.reads.refresh();
    if (!hasDueWork(store.reads, now)) return wakeAt(nextDueAt(store.reads, now), now);
    slots.hold(free);
    claiming = true;
    let events: readonly RequestEvent[] = [];
    try {
      const outcome = await committer.send({ type: 'Claim', ...deps.claim, now, max: free, after: lastAccount });
      if (!isRefusal(outcome) && 'events' in outcome) events = outcome.events as readonly RequestEvent[];
    } catch (error) {
      if (error instanceof StorageFault) deps.log.warn({ reason: error.message }, 'processing paused: write failed');
      else deps.log.error({ err: error }, 'claim failed');
      wakeAfterFault();
    } finally {
      claiming = false;
    }
    const started = events.filter((event) => event.type === 'RequestProcessingStarted');
    slots.letGo(free - started.length);
    if (started.length > 0) store.reads.refresh();
    for (const event of started) {
      const claimed = { reqId: event.reqId, attempt: event.attempt };
      if (deps.takesNoWork()) {
        deps.giveBack(claimed);
        continue;
      }
      lastAccount = store.reads.request(event.reqId)?.context.accountId ?? lastAccount;
      deps.run(claimed);
    }
    for (const event of events) if (event.type === 'RequestFailed') deps.gaveUp(event.reqId);
    if (again || started.length === free) {
      // Work came meanwhile, or the claim was full and more may be due: look again.
      again = false;
      schedule();
    } else {
      // The claim took what was due at its time and could be taken: the timer for what becomes due after that time
      // (at once, if that is already past: the claim took a while). Work due but left for its model's bound is taken
      // when a request of that model ends, not by the timer.
      wakeAt(nextDueAt(store.reads, now), clock.now());
    }
  };

  return {
    schedule,
    stop() {
      if (timer !== undefined) clearTimeout(timer);
      if (faultTimer !== undefined) clearTimeout(faultTimer);
    },
    /** A write of this process failed: look again in a moment, as nothing else may wake the pool (a full disk). */
    wakeAfterFault,
  };
};

export type Dispatcher = ReturnType<typeof createDispatcher>;
