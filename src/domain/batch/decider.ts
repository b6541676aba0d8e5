import { Refused } from '../errors.js';
import type { BatchEvent, WorkingStatus } from './events.js';
import { type BatchCounts, type BatchState, canApplyToBatch, linesDone } from './state.js';

/** Commands on one batch. Each carries the time it is issued at (`now`). */
export type BatchCommand =
  | {
      readonly type: 'CreateBatch';
      readonly accountId: string;
      readonly keyId: string;
      readonly endpoint: string;
      readonly inputFileId: string;
      readonly completionWindow: string;
      readonly windowMs: number;
      readonly metadata?: string | undefined;
      readonly outputExpiresAfterSeconds?: number | undefined;
      /** The account's bound of batches not ended (its plan's `maxBatchesInProgress`), decided inside the write. */
      readonly maxInProgress?: number | undefined;
      readonly now: number;
    }
  | { readonly type: 'TakeBatch'; readonly owner: string; readonly leaseMs: number; readonly now: number }
  /** The process named `owner` no longer exists (known on one machine): the batch's lease it held ends now. */
  | { readonly type: 'OwnerGone'; readonly owner: string; readonly now: number }
  | { readonly type: 'FailValidation'; readonly owner: string; readonly errors: string; readonly now: number }
  | {
      readonly type: 'StartBatch';
      readonly owner: string;
      readonly total: number;
      readonly model?: string | undefined;
      readonly now: number;
    }
  | { readonly type: 'CancelBatch'; readonly accountId: string; readonly now: number }
  | { readonly type: 'CloseWindow'; readonly now: number }
  /** Its account's token budget is used up: no more lines are queued (contract 21). */
  | {
      readonly type: 'SpendQuota';
      readonly owner: string;
      readonly budget: 'tokensPerDay' | 'tokensPerMonth';
      readonly now: number;
    }
  | { readonly type: 'FinalizeBatch'; readonly owner: string; readonly now: number }
  | {
      readonly type: 'EndBatch';
      readonly owner: string;
      /** The output and error files just written (absent: no line for it), made in the same write as the end. */
      readonly outputFile?: WrittenFile | undefined;
      readonly errorFile?: WrittenFile | undefined;
      readonly completed: number;
      readonly failed: number;
      readonly now: number;
    }
  /** A step of its housekeeping failed (not for the store, nor a lost lease): `reason` says how. */
  | { readonly type: 'RecordWorkFailure'; readonly owner: string; readonly reason: string; readonly now: number }
  /** The operator ends a finalizing batch cancelled, without its files (`airs batches cancel`). */
  | { readonly type: 'CancelFinalizing'; readonly now: number };

/** A file a batch wrote: its bytes are stored under `fileId`; the end of the batch makes it exist. */
export type WrittenFile = {
  readonly fileId: string;
  readonly filename: string;
  readonly bytes: number;
  readonly sha256: string;
  readonly expiresAt?: number | undefined;
};

const eventFor = (batchId: string, state: BatchState, counts: BatchCounts, command: BatchCommand): BatchEvent => {
  const at = command.now;
  switch (command.type) {
    case 'CreateBatch': {
      const { type: _type, now: _now, windowMs, maxInProgress: _bound, ...rest } = command;
      const created = { type: 'BatchCreated' as const, batchId, ...rest, at, expiresAt: at + windowMs };
      if (created.metadata === undefined) delete created.metadata;
      if (created.outputExpiresAfterSeconds === undefined) delete created.outputExpiresAfterSeconds;
      return created;
    }
    case 'TakeBatch':
      return { type: 'BatchTaken', batchId, owner: command.owner, leaseUntil: at + command.leaseMs, at };
    case 'OwnerGone':
      return { type: 'BatchOwnerGone', batchId, owner: command.owner, at };
    case 'FailValidation':
      return { type: 'BatchValidationFailed', batchId, owner: command.owner, errors: command.errors, at };
    case 'StartBatch':
      return command.model === undefined
        ? { type: 'BatchStarted', batchId, owner: command.owner, total: command.total, at }
        : { type: 'BatchStarted', batchId, owner: command.owner, total: command.total, model: command.model, at };
    case 'CancelBatch':
      return { type: 'BatchCancelRequested', batchId, at };
    case 'CloseWindow':
      return { type: 'BatchWindowClosed', batchId, at };
    case 'SpendQuota':
      return { type: 'BatchQuotaSpent', batchId, owner: command.owner, budget: command.budget, at };
    case 'FinalizeBatch':
      // The counts as the store holds them in this write: the machine decides whether they allow finalizing.
      return {
        type: 'BatchFinalizing',
        batchId,
        owner: command.owner,
        queued: counts.queued,
        done: linesDone(counts),
        at,
      };
    case 'EndBatch': {
      const ended = {
        type: 'BatchEnded' as const,
        batchId,
        owner: command.owner,
        outputFileId: command.outputFile?.fileId,
        errorFileId: command.errorFile?.fileId,
        completed: command.completed,
        failed: command.failed,
        at,
      };
      if (ended.outputFileId === undefined) delete ended.outputFileId;
      if (ended.errorFileId === undefined) delete ended.errorFileId;
      return ended;
    }
    case 'RecordWorkFailure':
      // The step is the status the store holds in this write (a status no step works in is refused by the machine).
      return {
        type: 'BatchWorkFailed',
        batchId,
        owner: command.owner,
        step: state.status as WorkingStatus,
        reason: reasonText(command.reason),
        at,
      };
    case 'CancelFinalizing':
      return { type: 'BatchFinalizingCancelled', batchId, at };
  }
};

/** A failure's reason is kept (in the log, and in the batch's errors) to this length. */
export const maxReasonChars = 500;

/**
 * A reason as it may be kept and shown: at most `maxReasonChars`, control characters (which a terminal would act on)
 * as spaces, and an unpaired surrogate (which storage would turn into U+FFFD, so the log would differ from the
 * decision) as U+FFFD already.
 */
const reasonText = (reason: string): string =>
  reason
    .slice(0, maxReasonChars)
    .replace(/\p{Cc}/gu, ' ')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/**
 * Decides a batch command: the event it means, if the batch machine accepts it in the batch's state (guards
 * included), else a refusal. A batch belongs to its account: a cancel from another is refused as if unknown.
 */
export const decideBatch = (
  batchId: string,
  state: BatchState,
  counts: BatchCounts,
  command: BatchCommand,
): BatchEvent[] | Refused => {
  if (command.type === 'CancelBatch' && state.context.accountId !== command.accountId)
    return new Refused({ message: `no batch ${batchId}` });
  const event = eventFor(batchId, state, counts, command);
  if (!canApplyToBatch(state, event))
    return new Refused({ message: `batch ${batchId} is ${state.status}: ${event.type} is not allowed now` });
  return [event];
};
