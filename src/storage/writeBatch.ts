import { isAccountEvent } from '../domain/account/events.js';
import { accountCountsOfBatch, accountCountsOfFile, addCountChange } from '../domain/accountCounters.js';
import { isBatchEvent } from '../domain/batch/events.js';
import { addCounts, countsDeltaOf } from '../domain/batch/lines.js';
import { type BatchView, evolveBatch, initialBatchState, noCounts } from '../domain/batch/state.js';
import { type Command, type DecisionReads, decideCommand, isRefusal } from '../domain/commands.js';
import type { DomainEvent, StoredEvent } from '../domain/events.js';
import { isFileEvent } from '../domain/file/events.js';
import { counterMoves } from '../domain/processingCounters.js';
import { initialRequestState, isQueued, type RequestState } from '../domain/request/state.js';
import { isWebhookEvent } from '../domain/webhook/events.js';
import type { CommandOutcome } from '../ports/Store.js';
import {
  projectAccountEvent,
  projectBatchChange,
  projectFileEvent,
  projectRequestChange,
  projectWebhookEvent,
  type ViewAccess,
} from './projection.js';

/** What a batch is written through: the views and indexes, and the log, all in one transaction. */
export type BatchTarget = {
  readonly views: ViewAccess;
  /** The request's committed state (before this batch). */
  readonly committedRequest: (reqId: string) => RequestState | undefined;
  /** The reads deciding needs that the views do not answer (webhook endpoints and deliveries, and accounts' uploads,
   * come from the views). */
  readonly reads: Omit<DecisionReads, 'request' | 'webhookEndpoint' | 'webhookDelivery' | 'uploadsOf'>;
  /** One log record for the whole batch, keyed by the sequence number of its last event. */
  readonly appendLog: (lastSeq: number, events: readonly StoredEvent[]) => void;
  /** Writes what the views gathered for the whole batch (the groups of grouped indexes). */
  readonly flush: () => void;
};

type Touched = { readonly before: RequestState; after: RequestState; text: string | undefined };

const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));

/**
 * Decides and writes one batch of commands inside an open write transaction. Each command is decided against the
 * state the commands before it left (requests from an overlay kept for the batch, accounts through the transaction);
 * its events take the next sequence numbers. Then, once for the whole batch: one log record, per request one record
 * (view and text) and one move of its index entries from where the batch found it to where it leaves it, and one
 * write per group of a grouped index that changed.
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
      entry = { before: state, after: state, text: undefined };
      touched.set(reqId, entry);
    }
    return entry;
  };
  /** Idempotency keys taken by requests made earlier in this batch (their index entries are written at its end). */
  const keysTaken = new Map<string, string>();
  /** How many requests earlier commands of this batch queued (or settled, negative) per account. */
  const queuedDeltas = new Map<string, number>();
  /** How many requests earlier commands of this batch started (or ended, negative) per processing counter. */
  const processingDeltas = new Map<string, number>();
  /** What earlier commands of this batch did to accounts' counters (open batches, bytes of files kept). */
  const accountDeltas = new Map<string, number>();
  /** Committed counts do not change during the batch (its counts are written at the end): read once per account. */
  const committedQueuedOf = new Map<string, number>();
  const committedQueued = (accountId: string) => {
    let count = committedQueuedOf.get(accountId);
    if (count === undefined) {
      count = target.reads.queuedCount(accountId);
      committedQueuedOf.set(accountId, count);
    }
    return count;
  };
  /** Committed processing counts, read once per counter (a claim asks for the same few counters per entry). */
  const committedProcessingOf = new Map<string, number>();
  const committedProcessing = (counter: string) => {
    let count = committedProcessingOf.get(counter);
    if (count === undefined) {
      count = target.reads.processingCount(counter);
      committedProcessingOf.set(counter, count);
    }
    return count;
  };
  let madeWaiting = false;
  let committedWaiting: boolean | undefined;
  /** Whether an earlier command of the batch moved the request elsewhere than `status` (the indexes lag behind). */
  const movedFrom = (reqId: string, status: RequestState['status']) => {
    const entry = touched.get(reqId);
    return entry !== undefined && entry.after.status !== status;
  };
  /** Batches this batch of commands changed (their state, or their lines' counts), written once at its end. */
  const batches = new Map<string, { readonly before: BatchView | undefined; after: BatchView }>();
  const batchEntryOf = (batchId: string) => {
    let entry = batches.get(batchId);
    if (entry === undefined) {
      const before = target.views.getBatch(batchId);
      entry = { before, after: before ?? { state: initialBatchState, counts: noCounts } };
      batches.set(batchId, entry);
    }
    return entry;
  };
  const reads: DecisionReads = {
    ...target.reads,
    request: (reqId) => entryOf(reqId).after,
    batch: (batchId) => {
      const view = batchEntryOf(batchId).after;
      return view.state.status === 'none' ? undefined : view;
    },
    file: (fileId) => target.views.getFile(fileId),
    // Projected command by command, like files: an upload decided earlier in the batch holds its room for the next.
    uploadsOf: (accountId) => target.views.getUploads(accountId) ?? [],
    webhookEndpoint: (endpointId) => target.views.getWebhookEndpoint(endpointId),
    webhookDelivery: (deliveryId) => target.views.getWebhookDelivery(deliveryId),
    idempotentRequest: (accountId, key) =>
      keysTaken.get(`${accountId}\u0000${key}`) ?? target.reads.idempotentRequest(accountId, key),
    queuedCount: (accountId) => committedQueued(accountId) + (queuedDeltas.get(accountId) ?? 0),
    queuedOf: function* (accountId) {
      for (const entry of target.reads.queuedOf(accountId)) if (!movedFrom(entry.reqId, 'waiting')) yield entry;
    },
    lapsedLeases: (now, limit) => target.reads.lapsedLeases(now, limit).filter((id) => !movedFrom(id, 'processing')),
    processingCount: (counter) => committedProcessing(counter) + (processingDeltas.get(counter) ?? 0),
    accountCount: (counter) => target.reads.accountCount(counter) + (accountDeltas.get(counter) ?? 0),
    // The committed answer does not change during the batch (its indexes are written at the end): read once.
    anyWaiting: () => {
      if (madeWaiting) return true;
      if (committedWaiting === undefined) committedWaiting = target.reads.anyWaiting();
      return committedWaiting;
    },
  };
  const count = (deltas: Map<string, number>, key: string, delta: number) => {
    if (delta !== 0) deltas.set(key, (deltas.get(key) ?? 0) + delta);
  };
  const addAccountDelta = (counter: string, delta: number) => count(accountDeltas, counter, delta);
  const logged: StoredEvent[] = [];
  let seq = lastSeq;

  const outcomes: (CommandOutcome | Error)[] = [];
  for (const command of commands) {
    let decision: ReturnType<typeof decideCommand>;
    try {
      decision = decideCommand(reads, command);
    } catch (error) {
      // Deciding is pure: a faulty command wrote nothing and fails alone.
      outcomes.push(asError(error));
      continue;
    }
    if (isRefusal(decision)) {
      outcomes.push(decision);
      continue;
    }
    if (decision.replayOf !== undefined) {
      outcomes.push({ events: [], replayOf: decision.replayOf });
      continue;
    }
    // The events were made by this decision alone: they take their place in the log as they are.
    const events = decision.events as (DomainEvent & { seq: number })[];
    for (const event of events) {
      event.seq = ++seq;
      logged.push(event);
    }
    for (const request of decision.requests ?? []) {
      const entry = entryOf(request.state.context.reqId);
      const { idempotencyKey, accountId, reqId } = request.state.context;
      const { status } = request.state;
      if (idempotencyKey !== undefined && entry.after.status === 'none')
        keysTaken.set(`${accountId}\u0000${idempotencyKey}`, reqId);
      count(queuedDeltas, accountId, Number(isQueued(status)) - Number(isQueued(entry.after.status)));
      if (status === 'processing' || entry.after.status === 'processing')
        for (const [counter, delta] of counterMoves(entry.after, request.state))
          count(processingDeltas, counter, delta);
      if (status === 'waiting') madeWaiting = true;
      const { batchId } = request.state.context;
      if (batchId !== undefined) {
        const delta = countsDeltaOf(entry.after, request.state);
        if (delta !== undefined) {
          const batch = batchEntryOf(batchId);
          const after = { state: batch.after.state, counts: addCounts(batch.after.counts, delta) };
          // Its answers count in its account's stored bytes (accountCounters.ts): the commands after it read them.
          addCountChange(addAccountDelta, accountCountsOfBatch(batch.after), accountCountsOfBatch(after));
          batch.after = after;
        }
      }
      entry.after = request.state;
      if (request.text !== undefined) entry.text = request.text;
    }
    for (const event of events) {
      if (isAccountEvent(event)) projectAccountEvent(target.views, event);
      // Projected now, like accounts: the commands after it (and this decision's outbox, already decided) read it.
      else if (isWebhookEvent(event)) projectWebhookEvent(target.views, event);
      else if (isFileEvent(event)) {
        // Projected now (its count too, which the store keeps apart from its committed count until the batch is
        // written); what it adds to its account's bytes is kept here for the commands after it.
        const before = target.views.getFile(event.fileId);
        projectFileEvent(target.views, event);
        addCountChange(
          addAccountDelta,
          accountCountsOfFile(before),
          accountCountsOfFile(target.views.getFile(event.fileId)),
        );
      } else if (isBatchEvent(event)) {
        const batch = batchEntryOf(event.batchId);
        const after = { state: evolveBatch(batch.after.state, event), counts: batch.after.counts };
        addCountChange(addAccountDelta, accountCountsOfBatch(batch.after), accountCountsOfBatch(after));
        batch.after = after;
      }
    }
    for (const { key, value } of decision.credentials ?? []) target.views.putCredential(key, value);
    outcomes.push({ events });
  }

  if (logged.length > 0) target.appendLog(seq, logged);
  for (const { before, after, text } of touched.values())
    if (after !== before) projectRequestChange(target.views, before, after, text);
  for (const { before, after } of batches.values())
    if (after !== before && after.state.status !== 'none') projectBatchChange(target.views, before, after);
  target.flush();
  return { outcomes, lastSeq: seq };
};
