import type { Logger } from 'pino';
import { dispatchLaneOf } from '../../domain/dispatchLane.js';
import type { ClockShape } from '../../ports/Clock.js';
import { type DueWork, StorageFault, type StoreShape } from '../../ports/Store.js';
import type { ClaimAsk, Claimed, ClaimedAttempt, WorkQueueShape } from '../../ports/WorkQueue.js';
import type { Slots } from './slots.js';

/** How long the dispatcher waits before it looks again after a write failed (the disk may be full for a while). */
const faultRetryMs = 1_000;

/**
 * When to take work, and taking it. A look for due work (`schedule`) runs at most once per event-loop turn, one at a
 * time: it holds every free worker, claims that many due requests (decided inside the store's write, so no other
 * process takes the same requests), lets go of the workers it did not need, and hands each request it got to `run`.
 * When nothing is due it sets the one timer for the next time something will be (a backoff's end, a lease's end).
 * Whatever can make work due calls `schedule`: a submit that queued, a worker let go, an outcome written, a change by
 * another process.
 */
export const createDispatcher = (deps: {
  readonly store: StoreShape;
  readonly queue: WorkQueueShape;
  readonly clock: ClockShape;
  readonly slots: Slots;
  readonly log: Logger;
  /** The claim's fields that do not change: owner, lease, model bounds, retry policy. */
  readonly claim: Omit<ClaimAsk, 'now' | 'max' | 'after'>;
  readonly takesNoWork: () => boolean;
  /** Runs a claimed request (its worker is held for it). */
  readonly run: (claimed: ClaimedAttempt) => void;
  /** A claim took `count` requests from the queue (admission's count). */
  readonly started?: (count: number) => void;
  /** Gives a claimed request back at once (its worker is held for it): the pool stopped taking work meanwhile. */
  readonly giveBack: (claimed: ClaimedAttempt) => Promise<void>;
  /** Requests the claim gave up (no attempt left for a lapsed lease): their outcome is durable. */
  readonly gaveUp: (reqId: string) => void;
  /** When something this process knows of (an upstream's cool-down ending) may make held work due: a look then. */
  readonly nextWake?: ((now: number) => number | undefined) | undefined;
  /** A look found nothing due now. */
  readonly nothingDue?: () => void;
}) => {
  const { store, queue, clock, slots } = deps;
  let scheduled = false;
  let claiming = false;
  let again = false;
  let timer: NodeJS.Timeout | undefined;
  let faultTimer: NodeJS.Timeout | undefined;
  /** The account served last: the next claim starts after it (accounts in turn, across claims). */
  let lastAccount: string | undefined;
  /** The look under way, if any, and the give-backs it started: a stop waits for both. */
  let looking: Promise<void> | undefined;
  const givingBack = new Set<Promise<void>>();

  /**
   * Whether something may have become due since the last read of the queue found nothing due: anything but a worker
   * let go says so (a request queued or given back, a change by another process, a timer). A worker let go alone
   * cannot make work due, so while nothing else happened its look reads nothing: under load that is most looks, one
   * per batch of answers. Set again before a read ends (what happens while it runs counts), and kept while the read
   * finds work due (work left for its model's bound is taken when a worker ends).
   */
  let mayBeDue = true;

  /** A look in the next turn of the event loop, unless one is set for it already. */
  const lookSoon = () => {
    if (scheduled || deps.takesNoWork()) return;
    scheduled = true;
    setImmediate(lookCaught);
  };

  const schedule = () => {
    mayBeDue = true;
    lookSoon();
  };

  const wakeAt = (due: number | undefined, now: number) => {
    if (timer !== undefined) clearTimeout(timer);
    const other = deps.nextWake?.(now);
    const at = due === undefined ? other : other === undefined ? due : Math.min(due, other);
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

  const look = async () => {
    scheduled = false;
    if (deps.takesNoWork()) return;
    if (claiming) {
      again = true;
      return;
    }
    const free = slots.free();
    if (free <= 0) return;
    if (!mayBeDue) return deps.nothingDue?.();
    const now = clock.now();
    claiming = true;
    mayBeDue = false;
    let due: DueWork;
    try {
      due = await store.reads.dueWork(now);
    } catch (error) {
      claiming = false;
      mayBeDue = true;
      deps.log.error({ err: error }, 'reading the queue failed');
      return wakeAfterFault();
    }
    if (due.now) mayBeDue = true;
    else {
      claiming = false;
      wakeAt(due.next, now);
      deps.nothingDue?.();
      if (again) {
        again = false;
        schedule();
      }
      return;
    }
    // Workers may have been taken meanwhile (a submit that starts at once).
    const holding = Math.min(free, slots.free());
    if (holding <= 0 || !slots.hold(holding)) {
      claiming = false;
      return;
    }
    let claimed: Claimed = { started: [], gaveUp: [] };
    try {
      claimed = await queue.claim({ ...deps.claim, now, max: holding, after: lastAccount });
    } catch (error) {
      if (error instanceof StorageFault) deps.log.warn({ reason: error.message }, 'processing paused: write failed');
      else deps.log.error({ err: error }, 'claim failed');
      wakeAfterFault();
    } finally {
      claiming = false;
    }
    const { started } = claimed;
    slots.letGo(holding - started.length);
    if (started.length > 0) deps.started?.(started.length);
    for (const attempt of started) {
      if (deps.takesNoWork()) {
        const given = deps.giveBack(attempt).finally(() => givingBack.delete(given));
        givingBack.add(given);
      } else deps.run(attempt);
    }
    for (const reqId of claimed.gaveUp) deps.gaveUp(reqId);
    // Lanes in turn across claims: the next starts after the lane of the last request this one took (its lane, not its
    // account: after an account's default work, its own priority, flex or batch lane is not next by right).
    const last = started.at(-1);
    // Only the order of lanes depends on this read: when it fails (the store cannot be reached), the order keeps on.
    if (last !== undefined)
      lastAccount = await store.reads.request(last.reqId).then(
        (state) => (state === undefined ? lastAccount : dispatchLaneOf(state.context)),
        () => lastAccount,
      );
    if (again || started.length === holding) {
      // Work came meanwhile, or the claim was full and more may be due: look again.
      again = false;
      schedule();
    } else {
      // The claim took what was due at its time and could be taken: the timer for what becomes due after that time
      // (at once, if that is already past: the claim took a while). Work due but left for its model's bound is taken
      // when a request of that model ends, not by the timer.
      try {
        wakeAt((await store.reads.dueWork(now)).next, clock.now());
      } catch {
        wakeAfterFault();
      }
    }
  };

  /** A look runs from a timer: what it does not catch itself must not end the process (an unhandled rejection). */
  const lookCaught = () => {
    const running = look()
      .catch((error: unknown) => {
        claiming = false;
        // The message as logged before the look had its name.
        deps.log.error({ err: error }, 'picking work failed');
        wakeAfterFault();
      })
      .finally(() => {
        if (looking === running) looking = undefined;
      });
    looking = running;
  };

  return {
    schedule,
    /** A worker was let go: a look, which reads the queue only if something may have become due meanwhile. */
    workerFree: lookSoon,
    /**
     * Takes no more work (the caller's `takesNoWork` says so by now). Resolves once the look under way has ended and
     * what it claimed meanwhile is given back: a clean stop leaves no request in processing under this process's name
     * (it would wait for its lease to lapse before anyone took it up).
     */
    async stop() {
      if (timer !== undefined) clearTimeout(timer);
      if (faultTimer !== undefined) clearTimeout(faultTimer);
      await looking;
      await Promise.allSettled([...givingBack]);
    },
    /** A write of this process failed: look again in a moment, as nothing else may wake the pool (a full disk). */
    wakeAfterFault,
  };
};

export type Dispatcher = ReturnType<typeof createDispatcher>;
