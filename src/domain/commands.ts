import { type AccountCommand, decideAccount } from './account/decider.js';
import type { AccountEvent } from './account/events.js';
import type { AccountState, KeyState, SessionState } from './account/state.js';
import {
  linesAheadCounter,
  linesWithRoom,
  openBatchesCounter,
  storedBytesCounter,
  storedFilesCounter,
} from './accountCounters.js';
import { type BatchCommand, decideBatch } from './batch/decider.js';
import { acceptsLines, type BatchView, initialBatchState, noCounts } from './batch/state.js';
import { type Claim, type ClaimReads, decideClaim } from './claim.js';
import {
  AccountLimitReached,
  DeliveryLifecycleViolation,
  IdempotencyKeyReused,
  LifecycleViolation,
  QueueFull,
  Refused,
} from './errors.js';
import type { DomainEvent } from './events.js';
import { type FailOver, failOverDecision } from './failOver.js';
import { decideFile, type FileCommand } from './file/decider.js';
import type { FileState } from './file/state.js';
import { createFileRefusal, decideUpload, reservationTaken, type UploadFacts } from './file/uploadDecider.js';
import type { AccountUploads } from './file/uploads.js';
import { accountCounter, modelCounter, upstreamCounter } from './processingCounters.js';
import { queueFullMessage } from './queuedCounter.js';
import { decideRequest as decideOnRequest, type RequestCommand } from './request/decider.js';
import { isExpired } from './request/questions.js';
import { initialRequestState, type RequestState } from './request/state.js';
import { chooseUpstream, standingsOf, type UpstreamPlace } from './upstreamChoice.js';
import { type HealthView, stateAt } from './upstreamHealth.js';
import {
  decideWebhookCommand,
  type WebhookCommand,
  type WebhookReads,
  webhookDeliveriesFor,
} from './webhook/commands.js';

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

/** Where an account's password hash is kept among the store's credentials. */
export const passwordCredentialKey = (accountId: string) => `password:${accountId}`;
/** Where a session's secret hash is kept among the store's credentials. */
export const sessionCredentialKey = (sessionId: string) => `session:${sessionId}`;

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

type RequestCommandOf = Exclude<
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

const decideRequest = (reads: DecisionReads, command: RequestCommandOf): Decision | Refusal => {
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

/** A claim's starts (and give-ups of lapsed leases), each request's state as it leaves it; no text changes. */
const decideClaimCommand = (reads: DecisionReads, claim: Claim): Decision => {
  const decisions = decideClaim(reads, claim);
  return {
    events: decisions.flatMap((decision) => decision.events),
    requests: decisions.map((decision) => ({ state: decision.state })),
  };
};

const decideAccountCommand = (
  reads: DecisionReads,
  { accountId, command, by }: Extract<Command, { type: 'Account' }>,
): Decision | Refusal => {
  // Facts other than the account itself are read here, inside the write, so that two concurrent writers (the server
  // and the CLI) cannot both take the same email or revoke from a stale copy of a key.
  if (command.type === 'CreateAccount' && reads.accountIdByEmail(command.email) !== undefined) {
    return new Refused({ message: `an account with email ${command.email} already exists` });
  }
  // Key ids are random; one taken already (by any account, or an admin key) is refused rather than overwritten.
  if ((command.type === 'CreateKey' || command.type === 'CreateAdminKey') && reads.key(command.keyId) !== undefined) {
    return new Refused({ message: `a key with id ${command.keyId} already exists` });
  }
  let current = command;
  if (command.type === 'RevokeKey' || command.type === 'RevokeAdminKey') {
    const key = reads.key(command.key.keyId);
    if (key === undefined) return new Refused({ message: `no key ${command.key.keyId}` });
    current = { ...command, key };
  }
  if (command.type === 'EndSession') current = { ...command, session: reads.session(command.sessionId) };
  // A suspension or a new password ends the account's sessions: those that exist as the write finds them, so that
  // a login committed a moment before (by the server, while the CLI suspends) is ended too.
  if (command.type === 'Suspend' || command.type === 'SetPassword')
    current = { ...command, sessions: reads.sessionsOf(accountId) };
  if (command.type === 'StartSession')
    current = { ...command, passwordHashNow: reads.credential(passwordCredentialKey(accountId)) };
  const decided = decideAccount(reads.account(accountId), current);
  if (decided instanceof Refused) return decided;
  const events: readonly AccountEvent[] =
    by === undefined || decided.length === 0
      ? decided
      : [...decided, { type: 'AdminActed', accountId, adminKeyId: by, action: command.type, at: command.now }];
  const credentials: { key: string; value: string | undefined }[] = [];
  if (current.type === 'SetPassword')
    credentials.push({ key: passwordCredentialKey(accountId), value: current.passwordHash });
  if (current.type === 'StartSession')
    credentials.push({ key: sessionCredentialKey(current.sessionId), value: current.secretHash });
  for (const event of events)
    if (event.type === 'SessionEnded')
      credentials.push({ key: sessionCredentialKey(event.sessionId), value: undefined });
  return credentials.length === 0 ? { events } : { events, credentials };
};

const decideBatchCommand = (reads: DecisionReads, { batchId, command }: Extract<Command, { type: 'Batch' }>) => {
  const view = reads.batch(batchId);
  if (command.type === 'CreateBatch') {
    // The input file is read inside the write: one deleted a moment before is not taken.
    const file = reads.file(command.inputFileId);
    if (file === undefined || file.accountId !== command.accountId)
      return new Refused({ message: `no file ${command.inputFileId}` });
    if (file.purpose !== 'batch')
      return new Refused({
        message: `file ${command.inputFileId} has purpose ${file.purpose}; a batch's input file has purpose batch`,
      });
    // The account's bound of open batches, decided here: two creates at once (two processes, two nodes) cannot both
    // take the last place.
    if (command.maxInProgress !== undefined && view === undefined) {
      const open = reads.accountCount(openBatchesCounter(command.accountId));
      if (open >= command.maxInProgress)
        return new AccountLimitReached({
          message: `this account has ${open} batches not ended; its plan allows ${command.maxInProgress} at once (maxBatchesInProgress): wait for one to end`,
          budget: 'batches',
          limit: command.maxInProgress,
          count: open,
        });
    }
  }
  const events = decideBatch(batchId, view?.state ?? initialBatchState, view?.counts ?? noCounts, command);
  if (events instanceof Refused || command.type !== 'EndBatch') return events instanceof Refused ? events : { events };
  // The output files come to exist with the batch's end, in the same write: a finalizer that lost its lease leaves
  // only bytes no file names (swept), never a file its account would see.
  const accountId = view?.state.context.accountId ?? '';
  const files: DomainEvent[] = [];
  for (const file of [command.outputFile, command.errorFile]) {
    if (file === undefined) continue;
    const created = decideFile(file.fileId, reads.file(file.fileId), {
      type: 'CreateFile',
      accountId,
      purpose: 'batch_output',
      filename: file.filename,
      bytes: file.bytes,
      sha256: file.sha256,
      now: command.now,
      expiresAt: file.expiresAt,
    });
    if (created instanceof Refused) return created;
    files.push(...created);
  }
  return { events: [...files, ...events] };
};

const uploadFacts = (reads: DecisionReads, accountId: string, file: FileState | undefined): UploadFacts => ({
  file,
  uploads: reads.uploadsOf(accountId),
  storedBytes: reads.accountCount(storedBytesCounter(accountId)),
  storedFiles: reads.accountCount(storedFilesCounter(accountId)),
});

const decideFileCommand = (reads: DecisionReads, { fileId, command }: Extract<Command, { type: 'File' }>) => {
  const file = reads.file(fileId);
  // An upload's reservation, and its file, are decided against what the account keeps and the other uploads hold, in
  // this write: two uploads at once (two processes, two nodes) cannot both take the last room or place.
  if (command.type === 'StartUpload' || command.type === 'EndUpload') {
    const events = decideUpload(fileId, uploadFacts(reads, command.accountId, file), command);
    return Array.isArray(events) ? { events } : events;
  }
  // An upload's file (it carries its bounds; a batch's output files never do) takes its reservation; the bytes of one
  // refused here, stored already, are then removed by the caller.
  const facts =
    command.type === 'CreateFile' && command.maxStoredBytes !== undefined && file === undefined
      ? uploadFacts(reads, command.accountId, file)
      : undefined;
  if (facts !== undefined && command.type === 'CreateFile') {
    const refused = createFileRefusal(fileId, facts, command);
    if (refused !== undefined) return refused;
  }
  const events = decideFile(fileId, file, command);
  if (events instanceof Refused) return events;
  if (facts === undefined || command.type !== 'CreateFile') return { events };
  return { events: [...events, ...reservationTaken(fileId, facts, command)] };
};

const decideAlone = (reads: DecisionReads, command: Command): Decision | Refusal => {
  if (command.type === 'Account') return decideAccountCommand(reads, command);
  if (command.type === 'Batch') return decideBatchCommand(reads, command);
  if (command.type === 'File') return decideFileCommand(reads, command);
  if (command.type === 'Claim') return decideClaimCommand(reads, command);
  if (command.type === 'FailOver') return failOverDecision(reads, command);
  if (command.type === 'WebhookEndpoint' || command.type === 'WebhookDelivery')
    return decideWebhookCommand(reads, command) as Decision | Refusal;
  return decideRequest(reads, command);
};

/**
 * Decides one command against the current state. Pure: reads come in, events (and a request's new state) go out.
 * The webhook deliveries its events make due (a request's or a batch's ending, for its account's endpoints) are
 * part of the same decision, so they are committed with the ending: the outbox.
 */
export const decideCommand = (reads: DecisionReads, command: Command): Decision | Refusal => {
  const decision = decideAlone(reads, command);
  if (isRefusal(decision) || decision.events.length === 0 || command.type === 'WebhookDelivery') return decision;
  const due = webhookDeliveriesFor(reads, decision.events);
  return due.length === 0 ? decision : { ...decision, events: [...decision.events, ...due] };
};

/** How many bytes of text a command carries (for the committer's bound on a batch). */
export const payloadBytesOf = (command: Command): number => {
  if (command.type === 'Submit') return (command.prompt.length + (command.metadata?.length ?? 0)) * 3;
  if (command.type === 'RecordSuccess') return command.response.length * 3;
  return 0;
};
