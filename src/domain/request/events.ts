/**
 * Events of one AI request's life. Every change of a request is one of these, appended to the log.
 * Time (`at`, epoch milliseconds) is data carried by the event, never read from a clock here.
 * Prompt and response text are not in the events: they live beside the log as payloads, so that
 * retention can delete them without rewriting history (see docs/decisions.md, "claim check").
 */
export type RequestQueued = {
  readonly type: 'RequestQueued';
  readonly reqId: string;
  readonly accountId: string;
  readonly keyId: string;
  readonly model: string;
  readonly promptChars: number;
  readonly at: number;
  readonly expiresAt: number;
  /**
   * What the stored text is: absent, a prompt; `messages`, a conversation (JSON of `{role, content}` messages, the
   * first OpenAI face); `chat`, a conversation with its generation parameters (JSON of `ChatInput`, in the shape of
   * a chat-completions request); `line`, a batch's line: where the line lies in its batch's input file (JSON of
   * `{file, offset, bytes, line, endpoint}`), read from there when an attempt starts, never copied (issue 40).
   */
  readonly input?: 'messages' | 'chat' | 'line' | undefined;
  /** The `Idempotency-Key` the submit came with, kept with the request so that a repeat finds it (after a crash too). */
  readonly idempotencyKey?: string | undefined;
  /** What identifies the submit's body (a hash): a repeat with the same key must carry the same. */
  readonly requestHash?: string | undefined;
  /** How many attempts the request may take before it fails for good (absent in events of older versions). */
  readonly maxAttempts?: number | undefined;
  /**
   * The caller's `metadata` (the OpenAI face: up to 16 string pairs), as the JSON text of the object; absent when it
   * sent none. Kept with the request, shown with it (a Response's `metadata`), never sent to a model.
   */
  readonly metadata?: string | undefined;
  /** A line of a batch (contract 16): the batch, and the line's `custom_id`. */
  readonly batchId?: string | undefined;
  readonly customId?: string | undefined;
  /** `responses`: made by `POST /v1/responses` (its webhooks are also `response.*`, about its `resp_…` id). Absent:
   * any other face. */
  readonly face?: 'responses' | undefined;
  /** A 32-bit hash of its instructions and the start of its input (promptAffinity.ts): which upstream has its prefix
   * cached. Absent: no affinity (batch lines, events of older versions). */
  readonly affinity?: number | undefined;
  /** When the request is cancelled if it has not ended (`Cancel-After`, contract 20): its creation plus that. Absent:
   * no deadline (and events of older versions). */
  readonly deadlineAt?: number | undefined;
  /** The service tier it is served at (contract 20, serviceTier.ts); absent: `default` (and events of older versions). */
  readonly serviceTier?: 'priority' | 'flex' | undefined;
};

/**
 * An attempt starts: a worker claimed the request (claim.ts; or a submit started it at once). `owner` (the process)
 * holds its lease until `leaseUntil` unless it extends it; once the lease has lapsed another worker's claim may take
 * it over. Events of older versions carry neither. (The log's name for a claim of one request, kept: logs are stored.)
 */
export type RequestProcessingStarted = {
  readonly type: 'RequestProcessingStarted';
  readonly reqId: string;
  readonly attempt: number;
  readonly at: number;
  readonly owner?: string | undefined;
  readonly leaseUntil?: number | undefined;
  /** The upstream of its model the attempt holds a place on (chosen in the claim: upstreamChoice.ts); absent: a model
   * without upstreams (echo), or events of older versions. */
  readonly upstream?: string | undefined;
  /** The model the attempt runs on when it is not the request's own (a fallback: contract 19). */
  readonly servedBy?: string | undefined;
};

/**
 * The attempt's holder moved it to another upstream of the model (failover: the one it was on failed in a way that is
 * the upstream's), without spending an attempt; its place moves with it.
 */
export type RequestUpstreamChanged = {
  readonly type: 'RequestUpstreamChanged';
  readonly reqId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly from: string;
  readonly to: string;
  readonly reason: string;
  readonly at: number;
};

/** The owner of the current attempt keeps it longer. */
export type RequestLeaseExtended = {
  readonly type: 'RequestLeaseExtended';
  readonly reqId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly leaseUntil: number;
  readonly at: number;
};

/** The owner of the current attempt gives it back unfinished (its process stops): it waits for a worker again. */
export type RequestReleased = {
  readonly type: 'RequestReleased';
  readonly reqId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly at: number;
};

/**
 * The process that holds the current attempt no longer exists (one machine can tell: see docs/decisions.md, "Dead
 * owners"): its lease ends now, as though it had lapsed. The attempt counts; the request is taken over, or given up
 * when no attempt is left, as any lapsed lease is.
 */
export type RequestOwnerGone = {
  readonly type: 'RequestOwnerGone';
  readonly reqId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly at: number;
};

export type RequestAttemptFailed = {
  readonly type: 'RequestAttemptFailed';
  readonly reqId: string;
  readonly attempt: number;
  readonly reason: string;
  readonly retryAt: number;
  readonly at: number;
  /** The worker that ran the attempt (absent in events of older versions). */
  readonly owner?: string | undefined;
};

export type RequestCompleted = {
  readonly type: 'RequestCompleted';
  readonly reqId: string;
  readonly responseChars: number;
  readonly at: number;
  /** Tokens the model read and wrote for this answer (the upstream's own count, or echo's word count); absent when
   * the model did not say (and in events written before usage was recorded). */
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  /** Why the model stopped: `stop`, `length`, `tool_calls`, `content_filter`. Absent: `stop`. */
  readonly finishReason?: string | undefined;
  /** `message`: the stored response is the assistant message as JSON (it calls tools); absent: the text itself. */
  readonly output?: 'message' | undefined;
  /** The worker and attempt that answered (absent in events of older versions). */
  readonly owner?: string | undefined;
  readonly attempt?: number | undefined;
  /** Milliseconds from the upstream call's start to its first token, as the provider saw it (its upstream is the
   * attempt's: RequestProcessingStarted, RequestUpstreamChanged). Absent: not seen (echo), or older versions. */
  readonly firstTokenMs?: number | undefined;
};

export type RequestFailed = {
  readonly type: 'RequestFailed';
  readonly reqId: string;
  readonly reason: string;
  readonly at: number;
  /** The worker that gave it up, and the attempt it gave up after (absent in events of older versions). */
  readonly owner?: string | undefined;
  readonly attempt?: number | undefined;
  /**
   * What the request's caller is told of the failure, in words an end user may see (no URL, no internals): "the
   * model's upstream refused the request (404)". Absent: the failure is told in general words.
   */
  readonly said?: string | undefined;
  /** Failed for good at its first failure, attempts left or not: no retry could mend it (an upstream's 404). */
  readonly permanent?: true | undefined;
};

export type RequestExpired = {
  readonly type: 'RequestExpired';
  readonly reqId: string;
  readonly at: number;
};

/**
 * Cancelled by its account (API) or an operator (CLI) while queued or processing: it is never completed. `deadline`:
 * cancelled because its deadline (`RequestQueued.deadlineAt`) passed before it ended; absent: asked for.
 */
export type RequestCancelled = {
  readonly type: 'RequestCancelled';
  readonly reqId: string;
  readonly at: number;
  readonly reason?: 'deadline' | undefined;
};

export type RequestEvent =
  | RequestQueued
  | RequestProcessingStarted
  | RequestLeaseExtended
  | RequestReleased
  | RequestOwnerGone
  | RequestAttemptFailed
  | RequestCompleted
  | RequestFailed
  | RequestExpired
  | RequestCancelled
  | RequestUpstreamChanged;

/** Every request event's type starts with `Request` and no other's does (a string compare is cheaper than a set
 * lookup for the millions of events a verification reads). */
export const isRequestEvent = (event: { type: string }): event is RequestEvent => event.type.startsWith('Request');
