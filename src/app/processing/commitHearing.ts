/** How the worker pool hears commits: this process's own, other processes' (the store's changes), a shared writer's. */
import type { StoreShape } from '../../ports/Store.js';
import type { CommitterShape } from '../Committer.js';
import type { Dispatcher } from './dispatcher.js';
import type { ModelCaller } from './modelCall.js';
import { summaryOf } from './wakeups.js';

/** Starts hearing, once per pool; returns the ways to stop hearing this process's own commits, and the others'. */
export const hearCommits = ({
  store,
  committer,
  dispatcher,
  caller,
  working,
  cancelledHere,
}: {
  readonly store: StoreShape;
  readonly committer: CommitterShape;
  readonly dispatcher: Pick<Dispatcher, 'schedule' | 'workerFree'>;
  readonly caller: Pick<ModelCaller, 'abortable' | 'abort'>;
  /** The requests this process runs attempts of now. */
  readonly working: ReadonlyMap<string, unknown>;
  /** A request was cancelled: its call here stops (or never starts), its waiters are told. */
  readonly cancelledHere: (reqId: string) => void;
}) => {
  /**
   * Whatever this process writes that can make work due, or free a model's place (a request queued, failed an
   * attempt, given back, finished, cancelled, expired), has the queue looked at again once it is durable: work due but
   * left for its model's bound waits for exactly such a change, and no timer would find it. With a shared writer, the
   * writer's summary of every commit (this process's own included) tells the same, below: hearing both would look twice.
   */
  const hearOwnCommits = (outcomes: Parameters<Parameters<typeof committer.onCommitted>[0]>[0]) => {
    const { workDue, freed, cancelled } = summaryOf(outcomes);
    if (workDue) dispatcher.schedule();
    // Work left for its model's bound was seen due by the last read, so the look reads the queue again.
    else if (freed) dispatcher.workerFree();
    // A cancel this process wrote without asking for it (the sweeper's, at a deadline) stops a call running here too.
    for (const reqId of cancelled) if (working.has(reqId)) cancelledHere(reqId);
  };
  const stopHearing = store.sharedWriter === undefined ? committer.onCommitted(hearOwnCommits) : () => {};

  /**
   * What another process commits (a submit it queued, a lease it took, a cancel, a request it finished) can make work
   * due here, or end a call running here: the dispatcher looks again, and calls in flight whose request was cancelled
   * meanwhile are aborted.
   */
  const lookAgain = () => {
    dispatcher.schedule();
    for (const reqId of caller.abortable())
      void store.reads.request(reqId).then(
        (state) => state?.status === 'cancelled' && caller.abort(reqId),
        () => {},
      );
  };
  const shared = store.sharedWriter;
  // With a writer shared by several processes, each of its commits comes summarised (once, by the writer): the queue
  // is looked at only when work became due or a place freed, and only the cancelled requests' calls are aborted. A
  // write from outside those processes (an `airs` command) still has everything looked at again.
  const stopHearingOthers =
    shared === undefined
      ? store.reads.onChange(lookAgain)
      : (() => {
          const stopCommits = shared.onCommit(({ workDue, freed, cancelled }) => {
            if (workDue) dispatcher.schedule();
            else if (freed) dispatcher.workerFree();
            // As when this process cancels: its call stops (or never starts), its waiters are told.
            for (const reqId of cancelled) if (working.has(reqId)) cancelledHere(reqId);
          });
          const stopForeign = shared.onForeignChange(lookAgain);
          return () => {
            stopCommits();
            stopForeign();
          };
        })();
  return { stopHearing, stopHearingOthers };
};
