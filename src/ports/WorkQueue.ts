import type { Fallbacks } from '../domain/claim.js';
import type { RetryPolicy } from '../domain/request/retryPolicy.js';
import type { UpstreamPlace } from '../domain/upstreamChoice.js';
import type { HealthView } from '../domain/upstreamHealth.js';

/**
 * The third part of the storage port, beside the event log (`Store.commit`) and the read model (`Store.reads`): the
 * moves a worker makes on the queue, each decided inside one of the store's writes against whatever every process has
 * committed, so several processes and servers share one queue safely. A worker names itself (`owner`) on everything
 * it takes; the machine records an extension, a release or an outcome only from the owner of the request's current
 * attempt while it holds it (fencing): a worker whose lease was taken over changes nothing.
 */
export interface WorkQueueShape {
  /**
   * The claim: moves up to `max` due requests to processing under `owner`'s lease (`leaseMs` from `now`), lapsed
   * leases of other owners first, then the queue with accounts in turn, each model within its bound across all
   * processes (domain/claim.ts decides it).
   */
  claim(ask: ClaimAsk): Promise<Claimed>;
  /** Extends the lease of an attempt this worker holds; false when it holds it no longer (stop working on it). */
  extendLease(held: Held, leaseMs: number, now: number): Promise<boolean>;
  /** Gives an attempt back to the queue at once (a stopping worker), rather than letting its lease lapse. */
  release(held: Held, now: number): Promise<void>;
  /** Records an attempt's answer; `refused` when the worker no longer holds the attempt (nothing was written). */
  recordSuccess(held: Held, answer: StoredAnswer, now: number): Promise<Recorded>;
  /**
   * Records an attempt's failure: a retry after the policy's backoff, or a failure for good once no attempt is left
   * or when no retry could mend it (`told.permanent`); `told.said` is what the caller is told if it fails for good.
   */
  /**
   * Moves the attempt to another upstream of its model after a failure that is the upstream's (`moved`: call it now),
   * or, with none left in service with a free place, records the failure as `recordFailure` does.
   */
  failOver(
    held: Held,
    ask: FailOverAsk,
    now: number,
  ): Promise<{ readonly moved: string } | { readonly released: true } | Recorded>;
  recordFailure(
    held: Held,
    reason: string,
    policy: RetryPolicy,
    now: number,
    told?: FailureTold | undefined,
  ): Promise<Recorded>;
}

/** What a failover asks (domain/failOver.ts): the model the attempt runs on, the upstream that failed, those tried. */
export type FailOverAsk = {
  readonly model: string;
  readonly from: string;
  readonly tried: readonly string[];
  readonly upstreams: readonly UpstreamPlace[];
  readonly reason: string;
  readonly policy: RetryPolicy;
  readonly said?: string | undefined;
  /** The holder's upstream health (domain/upstreamHealth.ts, HealthView). */
  readonly health?: HealthView | undefined;
  /** No upstream left to move to: give the attempt back rather than record the failure (work held, not burnt). */
  readonly hold?: boolean | undefined;
};

/** Beside its reason for the log: what a failure tells the caller, and whether a retry could mend it (modelCall.ts). */
export type FailureTold = {
  readonly said?: string | undefined;
  readonly permanent?: boolean | undefined;
};

/** An attempt a worker holds: which request, which attempt of it, and whose. */
export type Held = { readonly reqId: string; readonly attempt: number; readonly owner: string };

export type ClaimAsk = {
  readonly owner: string;
  readonly now: number;
  readonly leaseMs: number;
  readonly max: number;
  /** Each model's bound of requests processed at once, in all processes (absent: none). */
  readonly modelLimits: Readonly<Record<string, number>>;
  /** The account served last by this worker: the queue is read from the one after it. */
  readonly after?: string | undefined;
  /** Bounds requests that carry no attempt bound of their own (written by older versions). */
  readonly policy: RetryPolicy;
  /** Requests an account may have being processed at once, in all processes, by plan (`null`: no bound; a plan
   * absent, no longer in the config: `fallbackPlan`'s bound). An account's own `maxProcessing` comes first. */
  readonly maxProcessing?: Readonly<Record<string, number | null>> | undefined;
  /** The most of a model's workers one account holds while another account has work of that model due. */
  readonly accountShare?: number | undefined;
  /** The claiming process's workers (the workers of a model without a bound of its own). */
  readonly workers?: number | undefined;
  /** The share of a model's workers batches' lines always get, even while interactive work of it is due. */
  readonly batchShare?: number | undefined;
  /** Each model's upstreams, from this process's config (domain/claim.ts chooses among them). */
  readonly upstreams?: Readonly<Record<string, readonly UpstreamPlace[]>> | undefined;
  /** Each model's fallbacks (domain/claim.ts). */
  readonly fallbacks?: Readonly<Record<string, Fallbacks>> | undefined;
  /** This process's upstream health (its book: those not in service), read before the store's view. */
  readonly health?: HealthView | undefined;
  /** How long a `default` request waits before it starts as `priority` would (contract 20; absent: never). */
  readonly promoteAfterMs?: number | undefined;
};

/** A request a claim took: started under the claimant's lease, in attempt `attempt`, on `upstream` of its model (the
 * model `servedBy` when not its own). */
export type ClaimedAttempt = {
  readonly reqId: string;
  readonly attempt: number;
  readonly leaseUntil: number;
  readonly upstream?: string | undefined;
  readonly servedBy?: string | undefined;
};

export type Claimed = {
  /** The attempts now held, in the order taken. */
  readonly started: readonly ClaimedAttempt[];
  /** Requests whose lapsed lease had no attempt left: failed for good by this move. */
  readonly gaveUp: readonly string[];
};

/** A model's answer as stored: its text, and what the model said of it. */
export type StoredAnswer = {
  readonly text: string;
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
  /** How the answer ended, when not a plain stop. */
  readonly finishReason?: string | undefined;
  /** The answer is a whole assistant message (tool calls), stored as JSON. */
  readonly output?: 'message' | undefined;
  /** Milliseconds from the upstream call's start to its first token (see RequestCompleted). */
  readonly firstTokenMs?: number | undefined;
};

export type Recorded = 'recorded' | 'refused';
