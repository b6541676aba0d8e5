import { initialTransition, transition } from 'xstate';
import type { BatchEvent } from './events.js';
import { type BatchContext, batchMachine } from './machine.js';

/** Where a batch stands: the machine's state. */
export type BatchStatus =
  | 'none'
  | 'validating'
  | 'in_progress'
  | 'expiring'
  | 'cancelling'
  | 'failing'
  | 'finalizing'
  | 'completed'
  | 'failed'
  | 'expired'
  | 'cancelled';

export type BatchState = { readonly status: BatchStatus; readonly context: BatchContext };

/**
 * What the store counts of a batch's lines as they change (decided in the same write as the change): lines queued,
 * lines ended (completed; failed, cancelled or expired), and the tokens of the completed ones. `request_counts` and
 * `usage` are read from here, exact at every read. The characters of the completed lines' answers, and of those
 * whose requests still keep them (until they expire), are what the batch makes its account's storage keep
 * (accountCounters.ts).
 */
export type BatchCounts = {
  readonly queued: number;
  readonly completed: number;
  readonly failed: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly answerChars: number;
  readonly keptAnswerChars: number;
};

/** A batch as the store keeps it: its folded state and its lines' counts. */
export type BatchView = { readonly state: BatchState; readonly counts: BatchCounts };

export const noCounts: BatchCounts = {
  queued: 0,
  completed: 0,
  failed: 0,
  inputTokens: 0,
  outputTokens: 0,
  answerChars: 0,
  keptAnswerChars: 0,
};

type Snapshot = ReturnType<typeof batchMachine.resolveState>;

const toState = (snapshot: Snapshot): BatchState => ({
  status: snapshot.value as BatchStatus,
  context: snapshot.context,
});
const toSnapshot = (state: BatchState): Snapshot =>
  batchMachine.resolveState({ value: state.status, context: state.context } as never);

export const initialBatchState: BatchState = toState(initialTransition(batchMachine)[0]);

/** Whether the machine accepts `event` in `state` (guards included): the decider asks before it emits anything. */
export const canApplyToBatch = (state: BatchState, event: BatchEvent): boolean => toSnapshot(state).can(event);

/** The batch's window may be closed at `now` (in progress, at or after its expiry): the machine says so. */
export const mayCloseWindow = (state: BatchState, now: number): boolean =>
  canApplyToBatch(state, { type: 'BatchWindowClosed', batchId: state.context.batchId, at: now });

/**
 * `owner` may take the batch's lease at `now`: the batch is open, and the lease is free or already `owner`'s (no
 * holder, or its holder's lease has lapsed or ended). The machine's `free` guard says so.
 */
export const mayTakeBatch = (state: BatchState, owner: string, now: number): boolean =>
  canApplyToBatch(state, { type: 'BatchTaken', batchId: state.context.batchId, owner, leaseUntil: now, at: now });

/** The state after `event` (XState's pure transition); an event the machine does not accept changes nothing. */
export const evolveBatch = (state: BatchState, event: BatchEvent): BatchState =>
  canApplyToBatch(state, event) ? toState(transition(batchMachine, toSnapshot(state), event)[0]) : state;

/** Ended for good: no line runs and nothing more is written. */
export const isFinalBatch = (status: BatchStatus): boolean =>
  status === 'completed' || status === 'failed' || status === 'expired' || status === 'cancelled';

/** Lines may be queued only while the batch is in progress (not once cancelled or past its window). */
export const acceptsLines = (status: BatchStatus): boolean => status === 'in_progress';

/**
 * The status OpenAI's clients see (OpenAI has no word for airs' two stopping states): a batch past its window shows
 * `in_progress` until it ends `expired`, one whose housekeeping failed `in_progress` until it ends `failed` (its
 * `errors` say why meanwhile).
 */
export const publicBatchStatus = (status: BatchStatus): string =>
  status === 'expiring' || status === 'failing' ? 'in_progress' : status;

/** The account may cancel the batch at `now` (validating or in progress): the machine says so. */
export const mayCancelBatch = (state: BatchState, now: number): boolean =>
  canApplyToBatch(state, { type: 'BatchCancelRequested', batchId: state.context.batchId, at: now });

/** The operator may end the batch cancelled at `now`, its files unwritten (it is finalizing): the machine says so. */
export const mayCancelFinalizing = (state: BatchState, now: number): boolean =>
  canApplyToBatch(state, { type: 'BatchFinalizingCancelled', batchId: state.context.batchId, at: now });

/**
 * Its lines are being stopped before its files are written: the waiting ones are cancelled (and, for a cancel, the
 * running ones too); then it finalizes once those queued have ended.
 */
export const stopsLines = (status: BatchStatus): boolean =>
  status === 'expiring' || status === 'cancelling' || status === 'failing';

/** Lines that have ended, of those queued. */
export const linesDone = (counts: BatchCounts): number => counts.completed + counts.failed;
