import { assign, setup } from 'xstate';
import type { BatchEvent, BatchWorkFailed, WorkingStatus } from './events.js';

/** What the log knows of a batch, folded from its own events (its lines' counts are kept beside, see state.ts). */
export type BatchContext = {
  readonly batchId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly endpoint: string;
  readonly inputFileId: string;
  readonly completionWindow: string;
  readonly createdAt: number;
  readonly expiresAt: number;
  readonly metadata?: string;
  readonly outputExpiresAfterSeconds?: number;
  /** The process doing the batch's housekeeping, and until when (see BatchTaken). */
  readonly owner?: string;
  readonly leaseUntil?: number;
  /** Lines in the input file, once validated; and their one model, when they all name the same. */
  readonly total?: number;
  readonly model?: string;
  /**
   * Why it failed (JSON text of `[{code, line, message, param}]`): the validation's errors, or the failures of its
   * housekeeping that ended it (`batch_failed`).
   */
  readonly errors?: string;
  readonly inProgressAt?: number;
  readonly cancellingAt?: number;
  readonly windowClosedAt?: number;
  /** Its account's token budget that was used up while lines were still to be queued (BatchQuotaSpent): no more are. */
  readonly quotaSpent?: 'tokensPerDay' | 'tokensPerMonth';
  readonly finalizingAt?: number;
  /** What the batch ends as once its files are written. */
  readonly ending?: 'completed' | 'expired' | 'cancelled' | 'failed';
  /** Failures of its housekeeping (BatchWorkFailed) counted in the status `failedStep`, the last one that had any. */
  readonly failedStep?: WorkingStatus;
  readonly stepFailures?: number;
  readonly endedAt?: number;
  readonly failedAt?: number;
  readonly outputFileId?: string;
  readonly errorFileId?: string;
  /** Final counts (BatchEnded). */
  readonly completed?: number;
  readonly failed?: number;
};

const emptyContext: BatchContext = {
  batchId: '',
  accountId: '',
  keyId: '',
  endpoint: '',
  inputFileId: '',
  completionWindow: '',
  createdAt: 0,
  expiresAt: 0,
};

type Owned = { readonly owner: string; readonly at: number };
const owns = (context: BatchContext, event: BatchEvent) =>
  'owner' in event && context.owner === (event as Owned).owner && event.at < (context.leaseUntil ?? 0);
const free = (context: BatchContext, event: BatchEvent) =>
  context.owner === undefined || owns(context, event) || (context.leaseUntil ?? 0) <= event.at;

/**
 * Failures of one step of a batch's housekeeping that end it: a bug or an input that cannot be handled fails the
 * same way every time, and three tries tell it from a fault that came once. Counted per status, so each step (validate,
 * queue, stop the lines, write the files) has its own tries.
 */
export const maxWorkFailures = 3;

/** The failures of `event`'s step once it is counted. */
const failuresAfter = (context: BatchContext, event: BatchWorkFailed): number =>
  context.failedStep === event.step ? (context.stepFailures ?? 0) + 1 : 1;

/** The words for a step in a failed batch's error. */
const stepWords: Record<WorkingStatus, string> = {
  validating: 'validating its input file',
  in_progress: 'queueing its lines',
  expiring: 'stopping its lines',
  cancelling: 'stopping its lines',
  failing: 'stopping its lines',
  finalizing: 'writing its output files',
};

/** The batch's errors with the failure that ends its step added (`batch_failed`, as `errors.data` lists them). */
const errorsWith = (context: BatchContext, event: BatchWorkFailed): string => {
  const earlier = context.errors === undefined ? [] : (JSON.parse(context.errors) as unknown[]);
  const message = `${stepWords[event.step]} failed ${failuresAfter(context, event)} times; the last time: ${event.reason}`;
  return JSON.stringify([...earlier, { code: 'batch_failed', line: null, message, param: null }]);
};

const changeOf = (context: BatchContext, event: BatchEvent): Partial<BatchContext> => {
  switch (event.type) {
    case 'BatchCreated': {
      // A stored event also carries its `seq` (the log's, not the batch's): left out, as every other field but these.
      const { type: _type, at, seq: _seq, ...rest } = event as typeof event & { readonly seq?: number };
      const created: { -readonly [K in keyof BatchContext]?: BatchContext[K] } = { ...rest, createdAt: at };
      if (created.metadata === undefined) delete created.metadata;
      if (created.outputExpiresAfterSeconds === undefined) delete created.outputExpiresAfterSeconds;
      return created;
    }
    case 'BatchTaken':
      return { owner: event.owner, leaseUntil: event.leaseUntil };
    case 'BatchOwnerGone':
      return { leaseUntil: event.at };
    case 'BatchValidationFailed':
      return { errors: event.errors, failedAt: event.at };
    case 'BatchStarted':
      return event.model === undefined
        ? { total: event.total, inProgressAt: event.at }
        : { total: event.total, model: event.model, inProgressAt: event.at };
    case 'BatchCancelRequested':
      return { cancellingAt: event.at };
    case 'BatchWindowClosed':
      return { windowClosedAt: event.at };
    case 'BatchQuotaSpent':
      return { quotaSpent: event.budget };
    case 'BatchFinalizing':
      return { finalizingAt: event.at };
    case 'BatchEnded': {
      const ended: { -readonly [K in keyof BatchContext]?: BatchContext[K] } = {
        endedAt: event.at,
        completed: event.completed,
        failed: event.failed,
      };
      if (event.outputFileId !== undefined) ended.outputFileId = event.outputFileId;
      if (event.errorFileId !== undefined) ended.errorFileId = event.errorFileId;
      if (context.ending === 'failed') ended.failedAt = event.at;
      return ended;
    }
    case 'BatchWorkFailed':
      return { failedStep: event.step, stepFailures: failuresAfter(context, event) };
    case 'BatchFinalizingCancelled':
      return { ending: 'cancelled', endedAt: event.at, cancellingAt: context.cancellingAt ?? event.at };
  }
};

/** A step's last failure: the batch's errors name it (and, when it ends at once, when it failed). */
const failureOf = (context: BatchContext, event: BatchEvent, endsNow: boolean): Partial<BatchContext> => {
  if (event.type !== 'BatchWorkFailed') return {};
  const errors = errorsWith(context, event);
  return endsNow ? { errors, failedAt: event.at } : { errors, ending: 'failed' };
};

/** A step's failures: the last one its status allows ends it (to `failed` or `failing`), the others are counted. */
const workFailed = (then: 'failed' | 'failing') => [
  {
    guard: 'lastTry' as const,
    target: then,
    actions: [then === 'failed' ? ('failNow' as const) : ('failStep' as const), 'update' as const],
  },
  { guard: 'owns' as const, actions: 'update' as const },
];

/**
 * A batch's life (contract 16), the only place its rules live:
 *
 *   none ─Created→ validating ─Started→ in_progress ─Finalizing→ finalizing ─Ended→ completed
 *                  validating ─ValidationFailed→ failed
 *   validating | in_progress ─CancelRequested→ cancelling ─Finalizing→ finalizing ─Ended→ cancelled
 *   in_progress ─WindowClosed (at or after expiresAt)→ expiring ─Finalizing→ finalizing ─Ended→ expired
 *   finalizing ─FinalizingCancelled (the operator)→ cancelled
 *
 * A step of the housekeeping that fails (BatchWorkFailed) is tried again; its `maxWorkFailures`-th failure in one
 * status ends it: validating → failed; in_progress | expiring | cancelling → failing (its waiting lines are cancelled,
 * its running ones finish) ─Finalizing→ finalizing ─Ended→ failed with its files; failing | finalizing → failed at
 * once, without files. Nothing is retried forever.
 *
 * Finalizing needs every line that was queued to have ended: all `total` of them from in_progress; from cancelling
 * or expiring, those queued (no more are). Each step of the housekeeping is accepted only from the process that holds
 * the batch's lease; another takes the lease over once it has lapsed (its holder died), or at once when its holder's
 * process is known to be gone (`BatchOwnerGone` ends the lease).
 */
export const batchMachine = setup({
  types: { context: {} as BatchContext, events: {} as BatchEvent },
  guards: {
    free: ({ context, event }) => free(context, event),
    owns: ({ context, event }) => owns(context, event),
    // The lease's holder named by the event, while its lease runs: once ended, another notice changes nothing.
    ownerGone: ({ context, event }) => owns(context, event),
    allLinesDone: ({ context, event }) =>
      owns(context, event) && event.type === 'BatchFinalizing' && event.done === (context.total ?? 0),
    queuedLinesDone: ({ context, event }) =>
      owns(context, event) && event.type === 'BatchFinalizing' && event.done === event.queued,
    // Its budget used up: the lines queued are all it will have.
    quotaSpentLinesDone: ({ context, event }) =>
      context.quotaSpent !== undefined &&
      owns(context, event) &&
      event.type === 'BatchFinalizing' &&
      event.done === event.queued,
    windowPassed: ({ context, event }) => event.at >= context.expiresAt,
    lastTry: ({ context, event }) =>
      owns(context, event) && event.type === 'BatchWorkFailed' && failuresAfter(context, event) >= maxWorkFailures,
  },
  actions: {
    update: assign(({ context, event }) => changeOf(context, event)),
    // Before `update`, which counts the failure: the message reads the count the same way.
    failStep: assign(({ context, event }) => failureOf(context, event, false)),
    failNow: assign(({ context, event }) => failureOf(context, event, true)),
    endCompleted: assign({ ending: 'completed' as const }),
    endExpired: assign({ ending: 'expired' as const }),
    endCancelled: assign({ ending: 'cancelled' as const }),
  },
}).createMachine({
  id: 'batch',
  context: emptyContext,
  initial: 'none',
  states: {
    none: { on: { BatchCreated: { target: 'validating', actions: 'update' } } },
    validating: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchValidationFailed: { guard: 'owns', target: 'failed', actions: 'update' },
        BatchStarted: { guard: 'owns', target: 'in_progress', actions: 'update' },
        BatchCancelRequested: { target: 'cancelling', actions: 'update' },
        BatchWorkFailed: workFailed('failed'),
      },
    },
    in_progress: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchCancelRequested: { target: 'cancelling', actions: 'update' },
        BatchWindowClosed: { guard: 'windowPassed', target: 'expiring', actions: 'update' },
        BatchQuotaSpent: { guard: 'owns', actions: 'update' },
        BatchFinalizing: [
          { guard: 'allLinesDone', target: 'finalizing', actions: ['update', 'endCompleted'] },
          { guard: 'quotaSpentLinesDone', target: 'finalizing', actions: ['update', 'endCompleted'] },
        ],
        BatchWorkFailed: workFailed('failing'),
      },
    },
    expiring: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchFinalizing: { guard: 'queuedLinesDone', target: 'finalizing', actions: ['update', 'endExpired'] },
        BatchWorkFailed: workFailed('failing'),
      },
    },
    cancelling: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchFinalizing: { guard: 'queuedLinesDone', target: 'finalizing', actions: ['update', 'endCancelled'] },
        BatchWorkFailed: workFailed('failing'),
      },
    },
    // Its housekeeping failed: its waiting lines are cancelled, its running ones finish, then its files are written.
    failing: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchFinalizing: { guard: 'queuedLinesDone', target: 'finalizing', actions: 'update' },
        BatchWorkFailed: workFailed('failed'),
      },
    },
    finalizing: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchWorkFailed: workFailed('failed'),
        BatchFinalizingCancelled: { target: 'cancelled', actions: 'update' },
        BatchEnded: [
          {
            guard: ({ context, event }) => owns(context, event) && context.ending === 'completed',
            target: 'completed',
            actions: 'update',
          },
          {
            guard: ({ context, event }) => owns(context, event) && context.ending === 'expired',
            target: 'expired',
            actions: 'update',
          },
          {
            guard: ({ context, event }) => owns(context, event) && context.ending === 'cancelled',
            target: 'cancelled',
            actions: 'update',
          },
          {
            guard: ({ context, event }) => owns(context, event) && context.ending === 'failed',
            target: 'failed',
            actions: 'update',
          },
        ],
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    expired: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
