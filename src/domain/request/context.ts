/**
 * A request's data, in its own file so that the machine, its context updates and the facts its guards are made of
 * (contextUpdates.ts, rules.ts) all import it without importing each other in a circle.
 */

/**
 * What the log knows of one request, folded from its events. Text payloads are not here (see events.ts).
 */
export type RequestContext = {
  readonly reqId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly promptChars: number;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Attempts started so far (a restart after a crash counts as a new attempt). */
  readonly attempts: number;
  /** When the request may next be claimed by a worker. */
  readonly availableAt: number;
  /** When its current (or last) attempt started. */
  readonly startedAt?: number;
  readonly lastError?: string;
  readonly responseChars?: number;
  readonly completedAt?: number;
  readonly failedAt?: number;
  readonly failureReason?: string;
  /** What the caller is told of the failure (see RequestFailed.said). */
  readonly failureSaid?: string;
  readonly expiredAt?: number;
  /** What the stored input text is (see events.ts). */
  readonly input?: 'messages' | 'chat' | 'line';
  readonly idempotencyKey?: string;
  readonly requestHash?: string;
  readonly cancelledAt?: number;
  /** When it is cancelled if it has not ended (see RequestQueued.deadlineAt), and why it was cancelled (`deadline`:
   * that time passed; absent: asked for). */
  readonly deadlineAt?: number;
  readonly cancelReason?: 'deadline';
  /** The service tier it is served at (see RequestQueued.serviceTier); absent: `default`. */
  readonly serviceTier?: 'priority' | 'flex';
  /** Usage and ending of the answer, from `RequestCompleted` (see events.ts). */
  readonly inputTokens?: number;
  readonly outputTokens?: number;
  readonly finishReason?: string;
  readonly output?: 'message';
  /** The process that holds the current (or last) attempt, and until when (see RequestProcessingStarted). */
  readonly owner?: string;
  readonly leaseUntil?: number;
  /** Attempts the request may take before it fails for good. */
  readonly maxAttempts?: number;
  /** The caller's metadata, as the JSON text of the object (see RequestQueued). */
  readonly metadata?: string;
  /** A line of a batch: the batch, and its `custom_id` (see RequestQueued). */
  readonly batchId?: string;
  readonly customId?: string;
  /** Made by the Responses face (see RequestQueued.face). */
  readonly face?: 'responses';
  /** The prompt prefix's affinity key (see RequestQueued.affinity). */
  readonly affinity?: number;
  /** The upstream the running (or last) attempt holds a place on, and the model it runs on when not its own (a
   * fallback's): see RequestProcessingStarted, RequestUpstreamChanged. */
  readonly upstream?: string;
  readonly servedBy?: string;
};

/** The context before the first event. */
export const emptyContext: RequestContext = {
  reqId: '',
  accountId: '',
  keyId: '',
  model: '',
  promptChars: 0,
  createdAt: 0,
  expiresAt: 0,
  attempts: 0,
  availableAt: 0,
};
