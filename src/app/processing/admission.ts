import { Unavailable } from '../../domain/errors.js';

/**
 * Admission: when a submit is taken, and when it is answered `503` instead (the rule and its reasons:
 * docs/decisions.md, "Completions keep up with submits").
 *
 * The queue exists to absorb bursts, so a submit is refused only when taking it would let this process's intake run
 * away from its workers. Each process counts its **backlog**: the submits it took through the API that queued (no
 * worker of its own was free to start them at once), and those being written, less the requests its workers have since
 * taken from the queue.
 *
 * - A submit that a worker of this process starts at once is always taken (it adds nothing to the queue).
 * - Otherwise it is taken while the backlog is below `processing.maxBacklog`: a burst up to that size is queued
 *   whatever the workers' pace.
 * - Beyond it, submits answer `503 server_error` with `Retry-After: 1` until the workers have taken some of the
 *   backlog: from then on the process takes a new submit for each request its workers start, so the queue stops
 *   growing and completions keep pace with what is taken.
 * - The count starts again from zero whenever a look of this process finds nothing due: the queue is empty, whoever
 *   emptied it (another process, a cancel, an expiry), so the count cannot drift above the truth for long.
 *
 * The count errs low, never high: retries, requests given back and batch lines are not counted in, and every start
 * of a claim (theirs too) is counted out.
 */
export type Admission = {
  /** The refusal `take` would answer now, taking nothing (a check before the call's body is read). */
  full(): Unavailable | undefined;
  /** For a submit no worker of this process is free to start: undefined when it is taken (it holds a place in the
   * backlog until `written`), else the refusal to answer with. */
  take(): Unavailable | undefined;
  /** A submit's write ended: `took`, it held a place (`take`); `queued`, it was written and waits in the queue. */
  written(took: boolean, queued: boolean): void;
  /** This process's workers took `count` requests from the queue. */
  started(count: number): void;
  /** A look found nothing due: the queue is empty. */
  nothingDue(): void;
  /** The backlog as counted now (for tests and logs). */
  backlog(): number;
};

/** What a refused submit is told to wait: the workers take a batch of the backlog in well under a second. */
export const admissionRetryAfterSeconds = 1;

export const createAdmission = (maxBacklog: number): Admission => {
  /** Submits taken and being written: counted at once, so that callers arriving together cannot pass the bound. */
  let writing = 0;
  /** Submits written that wait in the queue, less the requests this process's workers took since. */
  let waiting = 0;
  const full = () =>
    writing + waiting < maxBacklog
      ? undefined
      : new Unavailable({
          message: `the queue is growing faster than this server's workers take it (${writing + waiting} requests waiting); retry shortly`,
          retryAfterSeconds: admissionRetryAfterSeconds,
        });
  return {
    full,
    take: () => {
      const refusal = full();
      if (refusal === undefined) writing++;
      return refusal;
    },
    written: (took, queued) => {
      if (took) writing--;
      if (queued) waiting++;
    },
    started: (count) => {
      waiting = Math.max(0, waiting - count);
    },
    nothingDue: () => {
      waiting = 0;
    },
    backlog: () => writing + waiting,
  };
};
