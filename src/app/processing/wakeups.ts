import type { DomainEvent } from '../../domain/events.js';
import { isRequestEvent } from '../../domain/request/events.js';
import type { CommandOutcome, CommitSummary } from '../../ports/Store.js';

/*
 * What a commit means for a worker pool, read from its events: whether work may have become due, whether a model's
 * place may have freed, which requests were cancelled. The pool of the process that committed reads it from its own
 * outcomes; with one writer for several processes (`serve --processes N` on LMDB), the writer reads it once per
 * commit and tells every process (CommitSummary), so that none re-reads the store to find out.
 */

/** Events after which work may be due that was not: a request waits (queued, to be retried, given back). */
const queues: ReadonlySet<string> = new Set([
  'RequestQueued',
  'RequestAttemptFailed',
  'RequestReleased',
  // Its lease ended (its process is gone): due now, for whichever process claims first.
  'RequestOwnerGone',
]);

/** Events after which a model may have room it did not have. */
const frees: ReadonlySet<string> = new Set(['RequestCompleted', 'RequestFailed', 'RequestCancelled', 'RequestExpired']);

/**
 * A command's events leave some request waiting: its last event there queues it. (A submit started at once queues
 * and starts its request in one outcome; a claim may retry one request and start another.)
 */
const waiting = new Set<string>();
export const leavesWaiting = (events: readonly DomainEvent[]) => {
  // One set for every call (it runs for each outcome of every batch, and synchronously).
  waiting.clear();
  for (const event of events) {
    if (!isRequestEvent(event)) continue;
    if (queues.has(event.type)) waiting.add(event.reqId);
    else waiting.delete(event.reqId);
  }
  return waiting.size > 0;
};

export const freesAPlace = (events: readonly DomainEvent[]) => events.some((event) => frees.has(event.type));

/** The summary of one commit's outcomes (a refusal or a failed command has no events: it changes nothing). */
export const summaryOf = (outcomes: readonly (CommandOutcome | Error)[]): CommitSummary => {
  let workDue = false;
  let freed = false;
  const cancelled: string[] = [];
  for (const outcome of outcomes) {
    if (outcome instanceof Error || !('events' in outcome)) continue;
    workDue ||= leavesWaiting(outcome.events);
    freed ||= freesAPlace(outcome.events);
    for (const event of outcome.events) if (event.type === 'RequestCancelled') cancelled.push(event.reqId);
  }
  return { workDue, freed, cancelled };
};
