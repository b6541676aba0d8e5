import type { AccountState } from './account/state.js';
import { claimFairly, type DispatchReads, type QueuedEntry, scanLimit } from './claimFairly.js';
import { LifecycleViolation } from './errors.js';
import { fallbackPlan } from './plans.js';
import {
  accountCounter,
  accountModelCounter,
  batchLinesCounter,
  countersOf,
  modelCounter,
  upstreamCounter,
} from './processingCounters.js';
import { decideRequest, type Placement, type RequestDecision } from './request/decider.js';
import { isExpired, isPastDeadline } from './request/questions.js';
import type { RetryPolicy } from './request/retryPolicy.js';
import { attemptsRemain, ownsLease } from './request/rules.js';
import type { RequestState } from './request/state.js';
import {
  chooseUpstream,
  standingsOf,
  takesACall,
  type UpstreamPlace,
  type UpstreamStanding,
} from './upstreamChoice.js';
import { type HealthView, stateAt, type UpstreamHealth } from './upstreamHealth.js';

/**
 * A claim: a worker process takes work, up to `max` requests, each started under a lease of `leaseMs` in its name (a
 * new attempt, `RequestProcessingStarted` in the log; the work queue's `claim` sends it). Decided inside the store's
 * write, against whatever every process has committed, so two processes never take the same request, and each
 * model's bound holds across all of them. Requests whose lease lapsed (their process died) come
 * first: they were started before anything in the queue; one with no attempt left fails for good instead. A process
 * never takes over a lease of its own: what it holds it finishes or gives back itself (a lease may lapse while its
 * holder still works, when a write took longer than the lease). Then the queue, accounts in turn (claimFairly), each
 * account within its plan's bound of requests being processed (`maxProcessing`, counted in all processes), and within
 * its share of each model's workers while another account has work of that model due (`accountShare`).
 */
export type Claim = {
  readonly type: 'Claim';
  readonly owner: string;
  readonly now: number;
  readonly leaseMs: number;
  readonly max: number;
  /** Each model's bound of requests being processed at once, in all processes (absent: none). */
  readonly modelLimits: Readonly<Record<string, number>>;
  /** The account this process served last: the claim of the queue starts after it. */
  readonly after?: string | undefined;
  /** Bounds requests that carry no attempt bound of their own (written by older versions). */
  readonly policy: RetryPolicy;
  /** Requests an account may have being processed at once, in all processes, by plan (`null`: no bound; a plan
   * absent, no longer in the config: `fallbackPlan`'s bound). An account's own `maxProcessing` comes first. */
  readonly maxProcessing?: Readonly<Record<string, number | null>> | undefined;
  /** The most of a model's workers (its bound, else `workers`) one account holds while another account has work of
   * that model due (absent: no share). */
  readonly accountShare?: number | undefined;
  /** The claiming process's workers: the workers of a model without a bound of its own. */
  readonly workers?: number | undefined;
  /** The share of a model's workers (its bound, else `workers`) batches' lines get even while interactive work of
   * it is due (`batches.minShare`; absent: lines are like any request). */
  readonly batchShare?: number | undefined;
  /** Each model's upstreams, from the claiming process's config (a model absent: it has none). Each call goes to one
   * with a free place (upstreamChoice.ts), counted in all processes: places are exact. */
  readonly upstreams?: Readonly<Record<string, readonly UpstreamPlace[]>> | undefined;
  /** Each model's fallback models, and after how long a waiting request spills over to them (absent: none). */
  readonly fallbacks?: Readonly<Record<string, Fallbacks>> | undefined;
  /** The claiming process's upstream health (its book: those not in service), read before the store's view. */
  readonly health?: HealthView | undefined;
  /** How long a `default` request waits before it starts as `priority` would (contract 20; absent: never). */
  readonly promoteAfterMs?: number | undefined;
};

/** A model's fallbacks (contract 19): in order, and the wait after which a request spills over to them. */
export type Fallbacks = { readonly models: readonly string[]; readonly spillAfterMs?: number | undefined };

/** What a claim reads, inside the write (with what earlier commands of the batch did). */
export type ClaimReads = DispatchReads & {
  request(reqId: string): RequestState | undefined;
  /** Requests being processed, in all processes, that count in a counter (processingCounters.ts: per model, per
   * account, per account and model). */
  processingCount(counter: string): number;
  account(accountId: string): AccountState | undefined;
  /** Up to `limit` requests being processed whose lease lapsed at or before `now`, earliest lapse first. */
  lapsedLeases(now: number, limit: number): readonly string[];
  /** An upstream's health as the store keeps it (upstreamHealth.ts); absent (or a store without the view): in service. */
  upstreamHealth?(model: string, upstream: string): UpstreamHealth | undefined;
};

/** How far a claim looks among lapsed leases (the rest wait for the next claim). */
const lapsedScan = scanLimit;

/** An account's bound of requests being processed at once: its own `maxProcessing`, else its plan's. */
const accountBound = (account: AccountState, byPlan: Readonly<Record<string, number | null>>): number => {
  const own = account.limits?.maxProcessing;
  if (own !== undefined && own !== null) return own;
  const planBound = Object.hasOwn(byPlan, account.plan) ? byPlan[account.plan] : byPlan[fallbackPlan];
  return planBound ?? Number.POSITIVE_INFINITY;
};

export const decideClaim = (reads: ClaimReads, claim: Claim): RequestDecision[] => {
  const decisions: RequestDecision[] = [];
  const taken = new Set<string>();
  /** Counts as earlier moves of this claim leave them (a give-up frees one of each counter of its request). */
  const counted = new Map<string, number>();
  const count = (counter: string) => counted.get(counter) ?? reads.processingCount(counter);
  const running = (model: string) => count(modelCounter(model));
  const limitOf = (model: string) => claim.modelLimits[model] ?? Number.POSITIVE_INFINITY;
  const maxProcessing = claim.maxProcessing ?? {};
  const boundOf = new Map<string, number>();
  const accountLimit = (accountId: string) => {
    let bound = boundOf.get(accountId);
    if (bound === undefined) {
      const account = reads.account(accountId);
      bound = account === undefined ? Number.POSITIVE_INFINITY : accountBound(account, maxProcessing);
      boundOf.set(accountId, bound);
    }
    return bound;
  };
  const { accountShare } = claim;
  const shareOf = (model: string) =>
    accountShare === undefined
      ? Number.POSITIVE_INFINITY
      : Math.max(1, Math.floor(accountShare * (claim.modelLimits[model] ?? claim.workers ?? claim.max)));
  const { batchShare } = claim;
  const batchShareOf = (model: string) => {
    if (batchShare === undefined) return Number.POSITIVE_INFINITY;
    if (batchShare <= 0) return 0;
    return Math.max(1, Math.floor(batchShare * (claim.modelLimits[model] ?? claim.workers ?? claim.max)));
  };
  const lease = { owner: claim.owner, leaseMs: claim.leaseMs };
  /** The requests this claim read, read once (the queue's candidates are read to see whether their time is up). */
  const states = new Map<string, RequestState | undefined>();
  const stateOf = (reqId: string) => {
    if (!states.has(reqId)) states.set(reqId, reads.request(reqId));
    return states.get(reqId);
  };
  let started = 0;
  /** The model's upstreams as this claim finds them (places taken by earlier moves of the claim included). */
  const standingsOfModel = (model: string): UpstreamStanding[] | undefined => {
    const places = claim.upstreams?.[model];
    if (places === undefined) return undefined;
    return standingsOf(
      places,
      (name) => count(upstreamCounter(model, name)),
      (name) => stateAt(claim.health?.[model]?.[name] ?? reads.upstreamHealth?.(model, name), claim.now),
    );
  };
  /** Requests this claim started on their own model, per model (what `running` does not count yet). */
  const ownPlaced = new Map<string, number>();
  /** A model of one upstream is not placed: its upstream's state is the health view's, its in flight the model's. */
  const soleState = (model: string) => {
    const upstreams = claim.health?.[model];
    if (upstreams === undefined) return 'in_service';
    const states = Object.values(upstreams).map((health) => stateAt(health, claim.now));
    if (states.includes('out_of_service')) return 'out_of_service';
    return states.includes('trying') ? 'trying' : 'in_service';
  };
  /** `itself`: the request asking is counted in flight already (a lapsed lease taken over). */
  const upstreamOpen = (model: string, itself = 0) => {
    const standings = standingsOfModel(model);
    if (standings !== undefined) return standings.some(takesACall);
    const state = soleState(model);
    // `trying`: one trial call, only while none of the model is in flight.
    return (
      state === 'in_service' || (state === 'trying' && running(model) - itself + (ownPlaced.get(model) ?? 0) === 0)
    );
  };
  const noneInService = (model: string) =>
    standingsOfModel(model)?.every((upstream) => upstream.state !== 'in_service') ?? soleState(model) !== 'in_service';
  /** Chooses the upstream a request's call goes to and takes its place (undefined: the model has none, or none may
   * take a call). */
  const place = (model: string, reqId: string): string | undefined => {
    const standings = standingsOfModel(model);
    if (standings === undefined) return undefined;
    const chosen = chooseUpstream(standings, stateOf(reqId)?.context.affinity);
    if (chosen !== undefined) counted.set(upstreamCounter(model, chosen), count(upstreamCounter(model, chosen)) + 1);
    return chosen;
  };
  /**
   * The fallback a queued request may run on now: while none of its model's upstreams is in service, or (spill-over)
   * once it has waited `spillAfterMs`; the first fallback under its bound with an upstream that takes a call.
   */
  const fallbackFor = (entry: QueuedEntry): string | undefined => {
    const fallbacks = claim.fallbacks?.[entry.model];
    if (fallbacks === undefined) return undefined;
    const spills = fallbacks.spillAfterMs !== undefined && claim.now - entry.availableAt >= fallbacks.spillAfterMs;
    if (!spills && !noneInService(entry.model)) return undefined;
    return fallbacks.models.find(
      (model) =>
        model !== entry.model && running(model) + (ownPlaced.get(model) ?? 0) < limitOf(model) && upstreamOpen(model),
    );
  };
  /** Where a request taken from the queue runs: its own model's upstream, else a fallback's (its place taken). */
  const placeEntry = (entry: QueuedEntry, own: boolean): Placement | undefined => {
    if (own) {
      // claimFairly counts these for its own checks; a fallback's bound must see them too.
      ownPlaced.set(entry.model, (ownPlaced.get(entry.model) ?? 0) + 1);
      const upstream = place(entry.model, entry.reqId);
      return upstream === undefined ? undefined : { upstream };
    }
    const servedBy = fallbackFor(entry);
    if (servedBy === undefined) return undefined;
    counted.set(modelCounter(servedBy), running(servedBy) + 1);
    const upstream = place(servedBy, entry.reqId);
    return upstream === undefined ? { servedBy } : { servedBy, upstream };
  };
  /**
   * A request whose time ran out is never started: it is expired here, or cancelled if its deadline passed (contract
   * 20), rather than left for the sweeper.
   */
  const endIfTimeUp = (state: RequestState): boolean => {
    if (!isExpired(state, claim.now) && !isPastDeadline(state, claim.now)) return false;
    const ended = decideRequest(state, { type: 'TimeUp', reqId: state.context.reqId, now: claim.now });
    if (ended instanceof LifecycleViolation) return false;
    decisions.push(ended);
    taken.add(state.context.reqId);
    return true;
  };

  for (const reqId of reads.lapsedLeases(claim.now, lapsedScan)) {
    const state = reads.request(reqId);
    // Never its own lease (the machine refuses that takeover too): nor is it given up here, its holder still may.
    if (state === undefined || state.status !== 'processing' || ownsLease(state.context, claim.owner)) continue;
    const { model } = state.context;
    const exhausted = !attemptsRemain(state.context, claim.policy.maxAttempts);
    if (!exhausted && (started >= claim.max || running(model) > limitOf(model) || !upstreamOpen(model, 1))) continue;
    const upstream = exhausted ? undefined : place(model, reqId);
    const decision = exhausted
      ? decideRequest(state, {
          type: 'RecordFailure',
          reqId,
          reason: 'its worker stopped answering (the lease of its last attempt lapsed)',
          policy: claim.policy,
          now: claim.now,
          owner: claim.owner,
        })
      : decideRequest(state, { type: 'StartAttempt', reqId, now: claim.now, ...lease, upstream });
    if (decision instanceof LifecycleViolation) {
      if (upstream !== undefined)
        counted.set(upstreamCounter(model, upstream), count(upstreamCounter(model, upstream)) - 1);
      endIfTimeUp(state);
      continue;
    }
    decisions.push(decision);
    taken.add(reqId);
    // A takeover on another upstream frees its place on the one it was on (the new one was taken by `place`).
    const { upstream: before } = state.context;
    if (upstream !== undefined && before !== undefined) {
      const was = upstreamCounter(state.context.servedBy ?? model, before);
      counted.set(was, count(was) - 1);
    }
    // A takeover keeps its counts (it was being processed and still is); a give-up frees one of each.
    if (exhausted) for (const counter of countersOf(state.context)) counted.set(counter, count(counter) - 1);
    else started++;
  }

  if (started < claim.max) {
    const fromQueue = claimFairly(
      reads,
      {
        lastAccount: claim.after,
        running: taken,
        runningOf: running,
        runningOfAccount: (accountId, model) =>
          count(model === undefined ? accountCounter(accountId) : accountModelCounter(accountId, model)),
        runningOfBatches: (model) => count(batchLinesCounter(model)),
      },
      {
        free: claim.max - started,
        modelLimit: limitOf,
        accountLimit,
        accountShare: shareOf,
        batchShare: batchShareOf,
        upstreamOpen,
        fallbackOpen: (entry) => fallbackFor(entry) !== undefined,
        place: placeEntry,
        promoteAfterMs: claim.promoteAfterMs,
        endsInstead: (entry) => {
          if (taken.has(entry.reqId)) return true;
          const state = stateOf(entry.reqId);
          return state !== undefined && endIfTimeUp(state);
        },
      },
      claim.now,
    );
    for (const { reqId, placement } of fromQueue.claimed) {
      const state = stateOf(reqId);
      if (state === undefined) continue;
      const decision = decideRequest(state, { type: 'StartAttempt', reqId, now: claim.now, ...lease, ...placement });
      if (decision instanceof LifecycleViolation) {
        endIfTimeUp(state);
        continue;
      }
      decisions.push(decision);
    }
  }
  return decisions;
};
