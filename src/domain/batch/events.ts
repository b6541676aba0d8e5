/**
 * Events of one batch's life (contract 16). A batch's lines are requests of their own (RequestQueued with `batchId`);
 * these events are the batch's own steps. Time (`at`, epoch ms) is data on the event, as for requests.
 *
 * The batch's housekeeping (validating its file, queueing its lines, cancelling them, writing its output files) is
 * done by one process at a time, under a lease (`BatchTaken`): every step of that work names its owner, and the
 * machine accepts it only from the holder, so two processes never both finalize a batch.
 */
export type BatchCreated = {
  readonly type: 'BatchCreated';
  readonly batchId: string;
  readonly accountId: string;
  readonly keyId: string;
  /** `/v1/chat/completions` or `/v1/responses`. */
  readonly endpoint: string;
  readonly inputFileId: string;
  readonly completionWindow: string;
  readonly at: number;
  readonly expiresAt: number;
  /** The caller's metadata, as the JSON text of the object; absent when none. */
  readonly metadata?: string | undefined;
  /** How long the output files live (`output_expires_after.seconds`); absent: the default. */
  readonly outputExpiresAfterSeconds?: number | undefined;
};

/** A process takes (or keeps) the batch's housekeeping until `leaseUntil`. */
export type BatchTaken = {
  readonly type: 'BatchTaken';
  readonly batchId: string;
  readonly owner: string;
  readonly leaseUntil: number;
  readonly at: number;
};

/**
 * The process holding the batch's lease no longer exists (one machine can tell): the lease ends now, as though it had
 * lapsed, and another process takes the housekeeping up at once.
 */
export type BatchOwnerGone = {
  readonly type: 'BatchOwnerGone';
  readonly batchId: string;
  readonly owner: string;
  readonly at: number;
};

/** The input file was refused whole: nothing runs. `errors` is the JSON text of `[{code, line, message, param}]`. */
export type BatchValidationFailed = {
  readonly type: 'BatchValidationFailed';
  readonly batchId: string;
  readonly owner: string;
  readonly errors: string;
  readonly at: number;
};

/** Every line is valid: `total` lines will be queued, all of `model` when they name one model. */
export type BatchStarted = {
  readonly type: 'BatchStarted';
  readonly batchId: string;
  readonly owner: string;
  readonly total: number;
  readonly model?: string | undefined;
  readonly at: number;
};

/** Its account asked to cancel it: no line is queued or started any more. */
export type BatchCancelRequested = {
  readonly type: 'BatchCancelRequested';
  readonly batchId: string;
  readonly at: number;
};

/** Its completion window passed: no line is queued or started any more; those running finish. */
export type BatchWindowClosed = { readonly type: 'BatchWindowClosed'; readonly batchId: string; readonly at: number };

/**
 * Every line that was queued has ended (`done` of `queued`): its holder writes the output files. The counts are those
 * the store held when this was decided (what the machine checks).
 */
export type BatchFinalizing = {
  readonly type: 'BatchFinalizing';
  readonly batchId: string;
  readonly owner: string;
  readonly queued: number;
  readonly done: number;
  readonly at: number;
};

/** The output files are written: the batch ends (completed, expired, cancelled or failed, as it was finalizing for). */
export type BatchEnded = {
  readonly type: 'BatchEnded';
  readonly batchId: string;
  readonly owner: string;
  readonly outputFileId?: string | undefined;
  readonly errorFileId?: string | undefined;
  /** Lines in the output file, and in the error file (`completed + failed` is the batch's total). */
  readonly completed: number;
  readonly failed: number;
  readonly at: number;
};

/** The statuses in which a batch's housekeeping works (a step of it may fail in each). */
export type WorkingStatus = 'validating' | 'in_progress' | 'expiring' | 'cancelling' | 'failing' | 'finalizing';

/**
 * A step of the batch's housekeeping failed for a reason that waiting does not mend (a bug, a `RangeError`, a line
 * that no longer validates; not a fault of the store, nor a lost lease): `step` is the status it was in (decided in
 * the write), `reason` what went wrong. Counted per status; the machine fails the batch after `maxWorkFailures` of
 * them in one status (machine.ts), so that nothing is retried forever.
 */
export type BatchWorkFailed = {
  readonly type: 'BatchWorkFailed';
  readonly batchId: string;
  readonly owner: string;
  readonly step: WorkingStatus;
  readonly reason: string;
  readonly at: number;
};

/**
 * The operator cancelled the batch while its output files were being written (`airs batches cancel`): it ends
 * cancelled without files; a finalize in flight is refused its end, and removes what it wrote.
 */
export type BatchFinalizingCancelled = {
  readonly type: 'BatchFinalizingCancelled';
  readonly batchId: string;
  readonly at: number;
};

/**
 * The batch's account used its token budget of the day or the month (contract 21) while lines were still to be queued:
 * no more are; those queued finish, and the rest end failed with `insufficient_quota` once the batch is finalized.
 */
export type BatchQuotaSpent = {
  readonly type: 'BatchQuotaSpent';
  readonly batchId: string;
  readonly owner: string;
  readonly budget: 'tokensPerDay' | 'tokensPerMonth';
  readonly at: number;
};

export type BatchEvent =
  | BatchQuotaSpent
  | BatchCreated
  | BatchTaken
  | BatchOwnerGone
  | BatchValidationFailed
  | BatchStarted
  | BatchCancelRequested
  | BatchWindowClosed
  | BatchFinalizing
  | BatchEnded
  | BatchWorkFailed
  | BatchFinalizingCancelled;

export const isBatchEvent = (event: { type: string }): event is BatchEvent => event.type.startsWith('Batch');
