/** A request's commands decided in the write: a submit's guards, and whether it starts at once. */
import { linesAheadCounter, linesWithRoom, storedBytesCounter } from './accountCounters.js';
import { acceptsLines } from './batch/state.js';
import type { Command, Decision, DecisionReads, Refusal } from './commandTypes.js';
import { AccountLimitReached, IdempotencyKeyReused, LifecycleViolation, QueueFull, Refused } from './errors.js';
import { accountCounter, modelCounter, upstreamCounter } from './processingCounters.js';
import { queueFullMessage } from './queuedCounter.js';
import { decideRequest as decideOnRequest } from './request/decider.js';
import { isExpired } from './request/questions.js';
import { initialRequestState } from './request/state.js';
import { chooseUpstream, standingsOf } from './upstreamChoice.js';
import { stateAt } from './upstreamHealth.js';

/** How long an idempotency key answers with the request it made (contract 12), unless that request expires sooner. */
export const idempotencyWindowMs = 24 * 60 * 60 * 1000;

type Submit = Extract<Command, { type: 'Submit' }>;

/**
 * A submit with an idempotency key the account used before, for a request that still lives and is within the
 * window: the same body answers that request again (`replayOf`), another body is refused. Otherwise the key is free
 * and the submit makes a new request.
 */
const earlierSubmit = (reads: DecisionReads, command: Submit): Decision | IdempotencyKeyReused | undefined => {
  if (command.idempotency === undefined) return undefined;
  const earlierId = reads.idempotentRequest(command.accountId, command.idempotency.key);
  const earlier = earlierId === undefined ? undefined : reads.request(earlierId);
  if (earlier === undefined || earlier.status === 'none' || isExpired(earlier, command.now)) return undefined;
  const { context } = earlier;
  if (command.now >= context.createdAt + idempotencyWindowMs) return undefined;
  if (context.requestHash !== command.idempotency.requestHash) {
    return new IdempotencyKeyReused({
      message: `Idempotency-Key was already used with a different body (by request ${context.reqId}); use a new key for a new request`,
    });
  }
  return { events: [], replayOf: context.reqId };
};

/** The commands decided by one request's machine (the other kinds are decided apart: commands.ts). */
export type RequestCommandOf = Exclude<
  Command,
  { type: 'Account' | 'Claim' | 'FailOver' | 'Batch' | 'File' | 'WebhookEndpoint' | 'WebhookDelivery' }
>;

const textOf = (command: RequestCommandOf): string | undefined => {
  if (command.type === 'Submit') return command.prompt;
  if (command.type === 'RecordSuccess') return command.response;
  return undefined;
};

/**
 * A batch's line is queued only while its account has room for the answers of its lines not ended, this one's too
 * (accountCounters.ts, `linesWithRoom`: files and batches' answers against its plan's bound), decided inside the write
 * (exact across processes and nodes); its batch waits for room. Only a new line: one queued already is refused as
 * such by the machine.
 */
const storageFull = (reads: DecisionReads, command: Submit): AccountLimitReached | undefined => {
  if (command.batchId === undefined || command.maxStoredBytes === undefined) return undefined;
  if ((reads.request(command.reqId)?.status ?? 'none') !== 'none') return undefined;
  const kept = reads.accountCount(storedBytesCounter(command.accountId));
  const ahead = reads.accountCount(linesAheadCounter(command.accountId));
  if (linesWithRoom({ kept, ahead }, command.answerRoom ?? 0, command.maxStoredBytes) > 0) return undefined;
  return new AccountLimitReached({
    message: `this account keeps ${kept} bytes of files and batch answers, and ${ahead} batch lines are still to answer; its plan allows ${command.maxStoredBytes} (maxFileStorageBytes): the batch's lines wait for room`,
    budget: 'file_storage',
    limit: command.maxStoredBytes,
    count: kept,
  });
};

/** A new request beyond the account's bound of requests waiting or being processed is refused, inside the write (a
 * batch's line never is: lines do not count there, and have bounds of their own; queuedCounter.ts). */
const queueFull = (reads: DecisionReads, command: Submit): QueueFull | undefined => {
  if (command.maxQueued === undefined || command.batchId !== undefined) return undefined;
  const count = reads.queuedCount(command.accountId);
  if (count < command.maxQueued) return undefined;
  return new QueueFull({ message: queueFullMessage(count, command.maxQueued), maxQueued: command.maxQueued, count });
};

/**
 * A submit starts at once only when nothing waits before it (queued requests are served first, accounts in turn) and
 * both its model and its account are below their bounds in all processes; otherwise it is only queued. (With nothing
 * waiting, no other account has work due: the share of a model's workers has nothing to give way to.)
 */
const mayStartNow = (reads: DecisionReads, command: Submit): Submit => {
  if (command.startNow === undefined) return command;
  const under = (bound: number | undefined, counter: string) =>
    bound === undefined || reads.processingCount(counter) < bound;
  const mayStart =
    under(command.modelLimit, modelCounter(command.model)) &&
    under(command.maxProcessing, accountCounter(command.accountId)) &&
    !reads.anyWaiting();
  if (!mayStart) return { ...command, startNow: undefined };
  const health = command.health?.[command.model];
  if (command.upstreams === undefined)
    // A model of one upstream starts at once only while it is in service (a trial call is the claim's to make).
    return health !== undefined && Object.values(health).some((h) => stateAt(h, command.now) !== 'in_service')
      ? { ...command, startNow: undefined }
      : command;
  // On an upstream with a free place, as a claim would choose it; none: it waits in the queue.
  const inFlight = (name: string) => reads.processingCount(upstreamCounter(command.model, name));
  const { now } = command;
  const upstream = chooseUpstream(
    standingsOf(command.upstreams, inFlight, (name) => stateAt(health?.[name], now)),
    command.affinity,
  );
  return upstream === undefined
    ? { ...command, startNow: undefined }
    : { ...command, startNow: { ...command.startNow, upstream } };
};

/** A batch's line is queued only while its batch takes lines (in progress: not cancelled, not past its window). */
const batchClosed = (reads: DecisionReads, command: Submit): Refused | undefined => {
  if (command.batchId === undefined) return undefined;
  const state = reads.batch(command.batchId)?.state;
  // Its account's token budget used up (BatchQuotaSpent): no more lines, though it is still in progress.
  if (state !== undefined && acceptsLines(state.status) && state.context.quotaSpent === undefined) return undefined;
  const why =
    state?.context.quotaSpent === undefined
      ? `it is ${state?.status ?? 'unknown'}`
      : `${state.context.quotaSpent} used`;
  return new Refused({ message: `batch ${command.batchId} takes no more lines (${why})` });
};

/** A request's command: a submit passes its guards first; the request's machine decides the rest. */
export const decideRequestCommand = (reads: DecisionReads, command: RequestCommandOf): Decision | Refusal => {
  let current = command;
  if (command.type === 'Submit') {
    const earlier =
      earlierSubmit(reads, command) ??
      batchClosed(reads, command) ??
      storageFull(reads, command) ??
      queueFull(reads, command);
    if (earlier !== undefined) return earlier;
    current = mayStartNow(reads, command);
  }
  const decision = decideOnRequest(reads.request(command.reqId) ?? initialRequestState, current);
  if (decision instanceof LifecycleViolation) return decision;
  return { events: decision.events, requests: [{ state: decision.state, text: textOf(command) }] };
};
