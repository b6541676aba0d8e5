import { LifecycleViolation } from './errors.js';
import { upstreamCounter } from './processingCounters.js';
import { decideRequest, type RequestDecision } from './request/decider.js';
import type { RetryPolicy } from './request/retryPolicy.js';
import type { RequestState } from './request/state.js';
import { chooseUpstream, standingsOf, type UpstreamPlace } from './upstreamChoice.js';
import { type HealthView, stateAt, type UpstreamHealth } from './upstreamHealth.js';

/**
 * Failover inside an attempt (contract 19): the attempt's holder, whose call failed in a way that is the upstream's,
 * asks to move the attempt to another upstream of the model. Decided in the store's write, fenced by attempt and owner
 * like a failure's record: to an upstream in service with a free place not yet tried in this attempt
 * (`RequestUpstreamChanged`, its place moving with it, no attempt spent); while another in service has no free
 * place, or none is in service (`hold`), the attempt is given back (`RequestReleased`: it waits in the queue); else the
 * attempt fails as any failure does (`RecordFailure`: a retry after backoff, or failed for good once no attempt is
 * left).
 */
export type FailOver = {
  readonly type: 'FailOver';
  readonly reqId: string;
  readonly owner: string;
  readonly attempt: number;
  readonly now: number;
  /** The model the attempt runs on (the request's own, or its fallback's). */
  readonly model: string;
  /** The upstream whose call failed, and every upstream this attempt has tried (it included). */
  readonly from: string;
  readonly tried: readonly string[];
  /** The model's upstreams, from the holder's config. */
  readonly upstreams: readonly UpstreamPlace[];
  readonly reason: string;
  /** As RecordFailure's, for when no upstream is left to move to. */
  readonly policy: RetryPolicy;
  readonly said?: string | undefined;
  /** The holder's upstream health (its book: those not in service), read before the store's view. */
  readonly health?: HealthView | undefined;
  /** With no upstream to move to: give the attempt back without spending it (no upstream of the model, nor of a
   * fallback, is in service: the request waits for one to be back). */
  readonly hold?: boolean | undefined;
};

/** What failover reads inside the write. */
export type FailOverReads = {
  request(reqId: string): RequestState | undefined;
  processingCount(counter: string): number;
  upstreamHealth?(model: string, upstream: string): UpstreamHealth | undefined;
};

export const decideFailOver = (reads: FailOverReads, command: FailOver): RequestDecision | LifecycleViolation => {
  const state = reads.request(command.reqId);
  if (state === undefined)
    return new LifecycleViolation({
      reqId: command.reqId,
      from: 'none',
      event: 'RequestUpstreamChanged',
      message: `request ${command.reqId} does not exist`,
    });
  const { owner, attempt, now, model } = command;
  const tried = new Set([...command.tried, command.from]);
  const standings = standingsOf(
    command.upstreams,
    (name) => reads.processingCount(upstreamCounter(model, name)),
    (name) => stateAt(command.health?.[model]?.[name] ?? reads.upstreamHealth?.(model, name), now),
  );
  const to = chooseUpstream(standings, state.context.affinity, tried);
  if (to !== undefined && state.context.upstream === command.from) {
    const moved = decideRequest(state, {
      type: 'MoveUpstream',
      reqId: command.reqId,
      owner,
      attempt,
      now,
      to,
      reason: command.reason,
    });
    if (!(moved instanceof LifecycleViolation)) return moved;
  }
  // Another upstream would take it but has no free place: the attempt waits in the queue for one, unspent (the failure
  // was the upstream's, not the request's). None in service at all (`hold`): it waits for one to be back.
  const waitsForPlace = standings.some(
    (upstream) => !tried.has(upstream.name) && upstream.state === 'in_service' && upstream.inFlight >= upstream.places,
  );
  if (command.hold === true || waitsForPlace)
    return decideRequest(state, { type: 'Release', reqId: command.reqId, owner, attempt, now });
  return decideRequest(state, {
    type: 'RecordFailure',
    reqId: command.reqId,
    reason: command.reason,
    policy: command.policy,
    now,
    owner,
    attempt,
    ...(command.said === undefined ? {} : { said: command.said }),
  });
};

/** The command's decision as the store writes it: its events, and the request's state after them. */
export const failOverDecision = (reads: FailOverReads, command: FailOver) => {
  const decision = decideFailOver(reads, command);
  return decision instanceof LifecycleViolation
    ? decision
    : { events: decision.events, requests: [{ state: decision.state }] };
};
