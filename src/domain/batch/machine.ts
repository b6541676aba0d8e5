import { assign, setup } from 'xstate';
import type { BatchEvent } from './events.js';

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
  /** The validation's errors (JSON text of `[{code, line, message, param}]`). */
  readonly errors?: string;
  readonly inProgressAt?: number;
  readonly cancellingAt?: number;
  readonly windowClosedAt?: number;
  readonly finalizingAt?: number;
  /** What the batch ends as once its files are written. */
  readonly ending?: 'completed' | 'expired' | 'cancelled';
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
      void context;
      return ended;
    }
  }
};

/**
 * A batch's life (contract 16), the only place its rules live:
 *
 *   none ─Created→ validating ─Started→ in_progress ─Finalizing→ finalizing ─Ended→ completed
 *                  validating ─ValidationFailed→ failed
 *   validating | in_progress ─CancelRequested→ cancelling ─Finalizing→ finalizing ─Ended→ cancelled
 *   in_progress ─WindowClosed (at or after expiresAt)→ expiring ─Finalizing→ finalizing ─Ended→ expired
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
    windowPassed: ({ context, event }) => event.at >= context.expiresAt,
  },
  actions: {
    update: assign(({ context, event }) => changeOf(context, event)),
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
      },
    },
    in_progress: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchCancelRequested: { target: 'cancelling', actions: 'update' },
        BatchWindowClosed: { guard: 'windowPassed', target: 'expiring', actions: 'update' },
        BatchFinalizing: { guard: 'allLinesDone', target: 'finalizing', actions: ['update', 'endCompleted'] },
      },
    },
    expiring: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchFinalizing: { guard: 'queuedLinesDone', target: 'finalizing', actions: ['update', 'endExpired'] },
      },
    },
    cancelling: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
        BatchFinalizing: { guard: 'queuedLinesDone', target: 'finalizing', actions: ['update', 'endCancelled'] },
      },
    },
    finalizing: {
      on: {
        BatchTaken: { guard: 'free', actions: 'update' },
        BatchOwnerGone: { guard: 'ownerGone', actions: 'update' },
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
        ],
      },
    },
    completed: { type: 'final' },
    failed: { type: 'final' },
    expired: { type: 'final' },
    cancelled: { type: 'final' },
  },
});
