import { type Command, type DecisionReads, decideCommand, isRefusal, type PayloadWrite } from '../../domain/commands.js';
import type { DomainEvent } from '../../domain/events.js';
import { isRequestEvent } from '../../domain/request/events.js';
import { evolve, initialRequestState, type RequestState } from '../../domain/request/state.js';
import type { CommandOutcome } from '../../ports/Store.js';
import { projectAccountEvent, projectRequestChange, type ViewAccess } from './projection.js';

/** What a batch is written through: the views and indexes, and the log and payloads, all in one transaction. */
export type BatchTarget = {
  readonly views: ViewAccess;
  /** The request's committed state (before this batch). */
  readonly committedRequest: (reqId: string) => RequestState | undefined;
  readonly reads: Omit<DecisionReads, 'request'>;
  /** One log record for the whole batch, keyed by the sequence number of its last event. */
  readonly appendLog: (lastSeq: number, events: readonly DomainEvent[]) => void;
  readonly putPayload: (payload: PayloadWrite) => void;
};

type Touched = { readonly before: RequestState; after: RequestState };

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

/**
 * Decides and writes one batch of commands inside an open write transaction. Each command is decided against the
 * state the commands before it left (requests from an overlay kept for the batch, accounts through the transaction);
 * its events take the next sequence numbers. Then, once for the whole batch: one log record, the payloads, and per
 * request one view write and one move of its index entries from where the batch found it to where it leaves it.
 * A refusal or a command whose deciding throws is that command's outcome alone; a fault while writing propagates
 * (the caller's transaction is then aborted, so nothing of the batch is written).
 */
export const writeBatch = (
  target: BatchTarget,
  commands: readonly Command[],
  lastSeq: number,
): { readonly outcomes: (CommandOutcome | Error)[]; readonly lastSeq: number } => {
  const touched = new Map<string, Touched>();
  const entryOf = (reqId: string): Touched => {
    let entry = touched.get(reqId);
    if (entry === undefined) {
      const state = target.committedRequest(reqId) ?? initialRequestState;
      entry = { before: state, after: state };
      touched.set(reqId, entry);
    }
    return entry;
  };
  const reads: DecisionReads = { ...target.reads, request: (reqId) => entryOf(reqId).after };
  const logged: DomainEvent[] = [];
  const payloads: PayloadWrite[] = [];
  let seq = lastSeq;

  const outcomes = commands.map((command): CommandOutcome | Error => {
    let decision: ReturnType<typeof decideCommand>;
    try {
      decision = decideCommand(reads, command);
    } catch (error) {
      // Deciding is pure: a faulty command wrote nothing and fails alone.
      return asError(error);
    }
    if (isRefusal(decision)) return decision;
    const events = decision.events.map((event) => {
      logged.push(event);
      if (isRequestEvent(event)) {
        const entry = entryOf(event.reqId);
        entry.after = evolve(entry.after, event);
      } else projectAccountEvent(target.views, event);
      return { ...event, seq: ++seq };
    });
    for (const payload of decision.payloads) payloads.push(payload);
    return { events };
  });

  if (logged.length > 0) target.appendLog(seq, logged);
  // Payloads first: a request that expired within this batch then has its text removed by the projection.
  for (const payload of payloads) target.putPayload(payload);
  for (const { before, after } of touched.values()) if (after !== before) projectRequestChange(target.views, before, after);
  return { outcomes, lastSeq: seq };
};
