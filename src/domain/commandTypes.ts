/** The commands, what deciding one gives (a Decision, or a Refusal), and the reads it is decided against. */
import type { AccountCommand } from './account/decider.js';
import type { AccountState, KeyState, SessionState } from './account/state.js';
import type { BatchCommand } from './batch/decider.js';
import type { BatchView } from './batch/state.js';
import type { Claim, ClaimReads } from './claim.js';
import {
  AccountLimitReached,
  DeliveryLifecycleViolation,
  IdempotencyKeyReused,
  LifecycleViolation,
  QueueFull,
  Refused,
} from './errors.js';
import type { DomainEvent } from './events.js';
import type { FailOver } from './failOver.js';
import type { FileCommand } from './file/decider.js';
import type { FileState } from './file/state.js';
import type { AccountUploads } from './file/uploads.js';
import type { RequestCommand } from './request/decider.js';
import type { RequestState } from './request/state.js';
import type { UpstreamPlace } from './upstreamChoice.js';
import type { HealthView } from './upstreamHealth.js';
import type { WebhookCommand, WebhookReads } from './webhook/commands.js';

/**
 * Every change of state the product makes is one of these commands, sent to the store's single committer, which
 * decides and appends a whole batch of them in one durable write. They are plain data: a batch can be logged,
 * replayed in a test, or applied one by one with the same result.
 */
export type Command =
  | (Extract<RequestCommand, { type: 'Submit' }> & {
      readonly prompt: string;
      /** With `startNow`: the model's bound of requests being processed at once, in all processes. */
      readonly modelLimit?: number | undefined;
      /** With `startNow`: the account's bound of requests being processed at once, in all processes (its plan's). */
      readonly maxProcessing?: number | undefined;
      /** With `startNow`: the model's upstreams (its call goes to one with a free place, chosen in the write). */
      readonly upstreams?: readonly UpstreamPlace[] | undefined;
      /** With `startNow`: the submitting process's upstream health (those not in service; upstreamHealth.ts). */
      readonly health?: HealthView | undefined;
      /** A batch's line: its account's bound of stored bytes (its plan's `maxFileStorageBytes`), and the room each
       * line not ended holds for its answer (twice the most an answer may take): the line is queued only while the
       * account has room for it (accountCounters.ts, `linesWithRoom`; its batch waits: app/batches/queueLines.ts). */
      readonly maxStoredBytes?: number | undefined;
      readonly answerRoom?: number | undefined;
    })
  | Extract<
      RequestCommand,
      {
        type:
          | 'StartAttempt'
          | 'RecordFailure'
          | 'ExtendLease'
          | 'Release'
          | 'OwnerGone'
          | 'Expire'
          | 'Cancel'
          | 'TimeUp';
      }
    >
  | (Extract<RequestCommand, { type: 'RecordSuccess' }> & { readonly response: string })
  | Claim
  | FailOver
  | {
      readonly type: 'Account';
      readonly accountId: string;
      readonly command: AccountCommand;
      /** The admin key that asks for it (the admin API): an `AdminActed` event naming it follows the change's events. */
      readonly by?: string | undefined;
    }
  | { readonly type: 'Batch'; readonly batchId: string; readonly command: BatchCommand }
  | { readonly type: 'File'; readonly fileId: string; readonly command: FileCommand }
  | WebhookCommand;

/** Why a command changed nothing. A value, never a throw: one refusal does not touch the rest of its batch. */
export type Refusal =
  | LifecycleViolation
  | DeliveryLifecycleViolation
  | Refused
  | IdempotencyKeyReused
  | QueueFull
  | AccountLimitReached;

/**
 * What a command means: the events to append; for a request, also the state they leave it in and the text it
 * brings (the prompt of a submit, the response of a success), which is kept beside the log, not in it.
 */
export type Decision = {
  readonly events: readonly DomainEvent[];
  /** The requests the events change, and the state each is left in (a claim changes several). */
  readonly requests?: readonly { readonly state: RequestState; readonly text?: string | undefined }[];
  /** Credentials to keep beside the log (a password's hash, a session secret's hash; `undefined`: delete it),
   * written in the same transaction as the events. */
  readonly credentials?: readonly { readonly key: string; readonly value: string | undefined }[];
  /** A submit repeated with the idempotency key of this earlier request (and the same body): nothing to append. */
  readonly replayOf?: string;
};

/** The state a command is decided against: the committed views plus what earlier commands of its batch did. */
export interface DecisionReads extends ClaimReads, WebhookReads {
  /** Whether any request waits for a worker (a submit then queues behind it instead of starting at once). */
  anyWaiting(): boolean;
  request(reqId: string): RequestState | undefined;
  account(accountId: string): AccountState | undefined;
  key(keyId: string): KeyState | undefined;
  accountIdByEmail(email: string): string | undefined;
  session(sessionId: string): SessionState | undefined;
  /** The ids of an account's sessions that have not ended. */
  sessionsOf(accountId: string): readonly string[];
  /** A credential kept beside the log (`passwordCredentialKey`, `sessionCredentialKey`). */
  credential(key: string): string | undefined;
  /** The request an account made with an idempotency key (index entry; the window is checked here). */
  idempotentRequest(accountId: string, key: string): string | undefined;
  /** How many of the account's interactive requests are waiting or being processed (queuedCounter.ts). */
  queuedCount(accountId: string): number;
  /** An account's counter (domain/accountCounters.ts: open batches, bytes of files kept). */
  accountCount(counter: string): number;
  /** A batch and its lines' counts, as committed plus what earlier commands of the batch of commands did. */
  batch(batchId: string): BatchView | undefined;
  file(fileId: string): FileState | undefined;
  /** The account's uploads whose reservation has not ended (file/uploads.ts), as earlier commands left them. */
  uploadsOf(accountId: string): AccountUploads;
}

export const isRefusal = (value: unknown): value is Refusal =>
  value instanceof LifecycleViolation ||
  value instanceof DeliveryLifecycleViolation ||
  value instanceof Refused ||
  value instanceof IdempotencyKeyReused ||
  value instanceof QueueFull ||
  value instanceof AccountLimitReached;
