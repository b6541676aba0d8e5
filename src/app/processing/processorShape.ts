/** What the rest of the app asks of the worker pool (ProcessorShape), and what a submit may start under (StartNow). */
import type { Unavailable } from '../../domain/errors.js';
import type { UpstreamPlace } from '../../domain/upstreamChoice.js';
import type { HealthView } from '../../domain/upstreamHealth.js';
import type { ModelInput } from '../storedInput.js';

/** What a submit may start under when a worker of this process is free for it (the store decides whether it does). */
export type StartNow = {
  readonly owner: string;
  readonly leaseMs: number;
  readonly modelLimit?: number | undefined;
  /** The model's upstreams (the submit's write chooses one with a free place). */
  readonly upstreams?: readonly UpstreamPlace[] | undefined;
  /** This process's upstream health (those not in service): the submit starts only on one in service. */
  readonly health?: HealthView | undefined;
};

export interface ProcessorShape {
  /** There may be work to take (a restart, a change by another process). Cheap; coalesced. */
  wake(): void;
  /**
   * Before a submit: a worker of this process, held for the new request, and the lease its submit may start it
   * under; undefined when none is free (then the request only queues). Say how it went with `submitted`.
   */
  reserve(model: string): StartNow | undefined;
  /** When `reserve` found no worker: undefined when a submit that must wait in the queue is taken now (say how its
   * write went with `submitted`), else the `503` to answer (admission.ts). */
  admission(): Unavailable | undefined;
  /** The refusal a submit would get now whatever its model (no worker free, the backlog full), taking nothing: lets
   * the HTTP face answer `503` before it spends the caller's rate limit and reads the body. */
  refusesNow(): Unavailable | undefined;
  /**
   * The submit was written (or failed: `started` undefined). Started: its first attempt is durable, the worker held
   * for it calls the model now with the input in hand. Otherwise the held worker (if `reserved`) is let go, and the
   * queue is looked at, as the request now waits in it. `queued`: the submit was written and its request waits in
   * the queue (for admission's count).
   */
  submitted(
    reqId: string,
    model: string,
    reserved: boolean,
    started:
      | {
          readonly attempt: number;
          readonly leaseUntil?: number | undefined;
          readonly input: ModelInput;
          readonly upstream?: string | undefined;
        }
      | undefined,
    queued?: boolean,
  ): void;
  /** The request was cancelled (durably): a model call in flight for it is aborted; its waiters are told. */
  cancelled(reqId: string): void;
  /** Resolves when an outcome of the request is durable here, after `timeoutMs`, or when `signal` aborts. Only a hint
   * to look again: the caller reads the request's state. */
  outcome(reqId: string, timeoutMs: number, signal?: AbortSignal): Promise<void>;
  /** Attempts this process runs right now (from their durable start until their outcome is durable). */
  inFlight(): number;
  /** Resolves when this process runs nothing and nothing is due now (for tests and graceful shutdown). */
  idle(): Promise<void>;
  /** Takes no new work from now on (a stopping server lets the calls in flight finish, and starts nothing more). */
  stopTakingWork(): void;
}
