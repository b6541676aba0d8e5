import { type ClaimPhase, laneOpensAt, phaseOfEntry } from './claimPhases.js';
import { accountOfLane, isBatchLane, laneKindOf } from './dispatchLane.js';
import type { Placement } from './request/decider.js';

/** A request waiting for a worker, as the dispatch index holds it. */
export type QueuedEntry = { readonly reqId: string; readonly availableAt: number; readonly model: string };

/** What a claim reads of the queue: the dispatch index, accounts in id order, each account's waiting requests by availability. */
export type DispatchReads = {
  /** Lanes with requests waiting for a worker (an account's own, or its batch lane: batch/lines.ts), in order,
   * starting after `after` and wrapping round to it. */
  queuedAccounts(after: string | undefined): Iterable<string>;
  /** A lane's requests waiting for a worker, earliest availability first. */
  queuedOf(lane: string): Iterable<QueuedEntry>;
};

/** What is being processed already, as the claim counts it against the bounds. */
export type ClaimState = {
  /** The lane served last; the next claim starts after it (round robin). */
  readonly lastAccount: string | undefined;
  /** Requests already being worked on (claimed by this claim, or their start not durable yet). */
  readonly running: ReadonlySet<string>;
  /** Requests in flight per model, against each model's own concurrency limit. */
  readonly runningOf: (model: string) => number;
  /** Requests of the account in flight (of `model` only, when given), in all processes. */
  readonly runningOfAccount?: (accountId: string, model?: string) => number;
  /** Batches' lines of the model in flight, in all processes. */
  readonly runningOfBatches?: (model: string) => number;
};

/** How many requests the claim may take, and the bounds it takes them within. */
export type ClaimLimits = {
  readonly free: number;
  readonly modelLimit: (model: string) => number;
  /** Requests the account may have in flight at once (its plan's `maxProcessing`; Infinity: no bound). */
  readonly accountLimit?: (accountId: string) => number;
  /** Requests of the model one account may hold while another account has work of that model it could start
   * (`processing.maxAccountShare` of the model's workers; Infinity: no share). */
  readonly accountShare?: (model: string) => number;
  /** Workers of the model that batches' lines get even while interactive work of it is due (`batches.minShare`);
   * beyond them a line waits while such work is due (absent: lines are like any request). */
  readonly batchShare?: (model: string) => number;
  /** Whether one of the model's upstreams may take a call now (absent: a model without upstreams always may). */
  readonly upstreamOpen?: (model: string) => boolean;
  /** Whether the entry may run on a fallback model now (claim.ts: spill-over, or no upstream of its own in service). */
  readonly fallbackOpen?: (entry: QueuedEntry) => boolean;
  /** Takes the place the entry's call goes to (its model's upstream, or a fallback's), once it is claimed. */
  readonly place?: (entry: QueuedEntry, own: boolean) => Placement | undefined;
  /** How long a `default` request waits (from when it became available) before it is started as `priority` would be
   * (`processing.promoteAfterSeconds`; absent: never). */
  readonly promoteAfterMs?: number | undefined;
  /** Whether the entry's time is up (expired, or past its `Cancel-After` deadline): the claim ends it instead of
   * starting it (claim.ts), and passes over it here, so that it takes no worker and counts for no bound. */
  readonly endsInstead?: (entry: QueuedEntry) => boolean;
};

/** A waiting request the claim takes. */
export type ClaimedEntry = {
  readonly reqId: string;
  readonly accountId: string;
  readonly model: string;
  /** Where its call goes (limits.place): an upstream of its model, or a fallback model's. */
  readonly placement?: Placement | undefined;
};

/** What the claim takes from the queue, and where it stopped. */
export type FairClaim = {
  readonly claimed: ClaimedEntry[];
  readonly lastAccount: string | undefined;
  /** The earliest future time a skipped request becomes available (to wake up then), if any. */
  readonly nextAvailableAt: number | undefined;
  /** Nothing was left waiting: every queued request the claim saw is claimed now or already being worked on. */
  readonly exhausted: boolean;
};

/**
 * How far one look into the work queue reads: into one account's queue, for a request a claim may take (past ones being
 * worked on); also a claim among lapsed leases (claim.ts) and the read model's `dueWork` into each account
 * (storage/dueWork.ts). PostgreSQL fetches as much ahead of a claim. The rest waits for the next look.
 */
export const scanLimit = 256;

type Cursor = {
  readonly entries: Iterator<QueuedEntry>;
  scanned: number;
  done: boolean;
  /** The entry read but left for a later phase (its tier's turn has not come): the lane's next, whatever the phase. */
  held: QueuedEntry | undefined;
  /** Entries passed over because the account held its share of their model: taken in the second pass, if any. */
  readonly deferred: QueuedEntry[];
};

const noBound = () => Number.POSITIVE_INFINITY;

/** The claim's phases, one per tier, highest first (see claimFairly). */
type Phase = ClaimPhase;
/** The passes, each a phase with the accounts' shares held or not: priority and default work within the shares, then
 * beyond them (the share holds while another account has such work due, whatever its tier), then flex. */
const passes: readonly (readonly [Phase, boolean])[] = [
  [0, true],
  [1, true],
  [0, false],
  [1, false],
  [2, true],
  [2, false],
];

/**
 * Chooses the up to `free` waiting requests a claim takes, accounts in turn: one request from each account with work, in
 * account order starting after the account served last, round after round. So an account with 10,000 queued
 * requests gets one worker turn per round, like an account with one. Within an account, requests go in the order
 * they became available; requests of a model at its concurrency limit are passed over for that account's next, and
 * an account at its own bound (`accountLimit`) takes none.
 *
 * Service tiers (contract 20) make three phases, each its own rounds: `priority` lanes, with `default` requests that
 * have waited `promoteAfterMs` (so `default` never starves); then `default` lanes, with batches' lines while batches
 * hold less than their share of the model's workers (`batchShare`); then `flex` lanes and the rest of the lines. So
 * due work of a higher tier always goes first, and flex work and a batch beyond its share get only the workers nothing
 * else could take: a batch neither starves interactive traffic nor is starved by it.
 *
 * Two passes make the share of a model's workers (`accountShare`) a rule of the claim: the first passes over a request
 * whose account already holds its share of the model, so the workers go to other accounts' work of that model first;
 * the second, only while workers are left (no other account could start work of that model), takes what the first
 * passed over. So an account alone may use every worker, and while it holds more than its share, every worker that
 * comes free goes to another account that has work of the model due. Both passes of priority and default go before
 * flex's (`passes`): an account's share holds against another's default work, and flex still waits for both.
 */
export const claimFairly = (reads: DispatchReads, state: ClaimState, limits: ClaimLimits, now: number): FairClaim => {
  const claimed: ClaimedEntry[] = [];
  const taken = new Set<string>();
  /** Requests of each model claimed by this claim, on top of those running before it. */
  const perModel = new Map<string, number>();
  /** ... of each account (key: its id), and of each account and model (key: id NUL model). */
  const perAccount = new Map<string, number>();
  const runningNow = (model: string) => state.runningOf(model) + (perModel.get(model) ?? 0);
  const accountLimit = limits.accountLimit ?? noBound;
  const accountShare = limits.accountShare ?? noBound;
  const batchShare = limits.batchShare ?? noBound;
  const batchesNow = (model: string) =>
    (state.runningOfBatches?.(model) ?? 0) + (perModel.get(`\u0000batch\u0000${model}`) ?? 0);
  const ofAccount = (accountId: string) =>
    (state.runningOfAccount?.(accountId) ?? 0) + (perAccount.get(accountId) ?? 0);
  const ofAccountModel = (accountId: string, model: string) =>
    (state.runningOfAccount?.(accountId, model) ?? 0) + (perAccount.get(`${accountId}\u0000${model}`) ?? 0);
  const add = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);
  let lastAccount = state.lastAccount;
  let nextAvailableAt: number | undefined;
  let leftBehind = false;

  const waitingHere = (entry: QueuedEntry) => !state.running.has(entry.reqId) && !taken.has(entry.reqId);
  const eligible = (entry: QueuedEntry, accountId: string) =>
    waitingHere(entry) &&
    ofAccount(accountId) < accountLimit(accountId) &&
    ((runningNow(entry.model) < limits.modelLimit(entry.model) && (limits.upstreamOpen?.(entry.model) ?? true)) ||
      (limits.fallbackOpen?.(entry) ?? false));
  /**
   * Whether a lane of another account has work waiting, per account, read once per claim. The share holds only while
   * another account has work due: an account alone defers nothing, so its claim reads no deeper than it takes (a
   * sharing pass that deferred every entry of a lone account read its queue to the scan's limit at every claim).
   */
  const others = new Map<string, boolean>();
  const anotherAccountWaits = (accountId: string) => {
    let found = others.get(accountId);
    if (found === undefined) {
      found = false;
      for (const lane of reads.queuedAccounts(undefined))
        if (accountOfLane(lane) !== accountId) {
          found = true;
          break;
        }
      others.set(accountId, found);
    }
    return found;
  };
  const overShare = (entry: QueuedEntry, accountId: string) =>
    ofAccountModel(accountId, entry.model) >= accountShare(entry.model) && anotherAccountWaits(accountId);
  const { promoteAfterMs } = limits;

  // One cursor per account for the whole claim: later rounds continue where the last one stopped.
  const cursors = new Map<string, Cursor>();
  const firstEligible = (lane: string, sharing: boolean, phase: Phase): QueuedEntry | undefined => {
    const kind = laneKindOf(lane);
    if (laneOpensAt(kind, promoteAfterMs) > phase) return undefined;
    const accountId = accountOfLane(lane);
    let cursor = cursors.get(lane);
    if (cursor === undefined) {
      cursor = {
        entries: reads.queuedOf(lane)[Symbol.iterator](),
        scanned: 0,
        done: false,
        held: undefined,
        deferred: [],
      };
      cursors.set(lane, cursor);
    }
    if (!sharing) {
      const index = cursor.deferred.findIndex((entry) => eligible(entry, accountId));
      if (index >= 0) return cursor.deferred.splice(index, 1)[0];
    }
    while (cursor.held !== undefined || !cursor.done) {
      let entry = cursor.held;
      cursor.held = undefined;
      if (entry === undefined) {
        const next = cursor.entries.next();
        if (next.done || ++cursor.scanned > scanLimit) {
          if (!next.done) leftBehind = true;
          cursor.done = true;
          return undefined;
        }
        entry = next.value;
      }
      if (!eligible(entry, accountId)) {
        // Passed over for its model's limit or its account's (not because it is being worked on): it still waits.
        if (waitingHere(entry)) leftBehind = true;
        continue;
      }
      if (entry.availableAt > now) {
        leftBehind = true;
        // Later entries of this account become available later still.
        nextAvailableAt = Math.min(nextAvailableAt ?? entry.availableAt, entry.availableAt);
        cursor.done = true;
        return undefined;
      }
      if (limits.endsInstead?.(entry)) continue;
      // Its tier's turn has not come: the lane waits for a later phase (its later entries are no more due).
      const batchWithinShare = kind !== 'batch' || batchesNow(entry.model) < batchShare(entry.model);
      if (phaseOfEntry(kind, entry.availableAt, now, promoteAfterMs, batchWithinShare) > phase) {
        cursor.held = entry;
        return undefined;
      }
      if (sharing && overShare(entry, accountId)) {
        cursor.deferred.push(entry);
        continue;
      }
      return entry;
    }
    return undefined;
  };

  /**
   * The lanes with work, in turn after `after`: read from the store by the first round, which goes once round them all
   * unless it fills the claim; later rounds go round the same list (choosing writes nothing, so it is still the same).
   */
  let lanes: string[] | undefined;
  function* lanesAfter(after: string | undefined): Generator<string> {
    if (lanes === undefined) {
      const seen: string[] = [];
      for (const lane of reads.queuedAccounts(after)) {
        seen.push(lane);
        yield lane;
      }
      lanes = seen;
      return;
    }
    const from = after === undefined ? -1 : lanes.indexOf(after);
    for (let i = 1; i <= lanes.length; i++) yield lanes[(from + i) % lanes.length] as string;
  }

  let full = false;
  const rounds = (sharing: boolean, phase: Phase) => {
    while (claimed.length < limits.free) {
      const before = claimed.length;
      for (const lane of lanesAfter(lastAccount)) {
        const entry = firstEligible(lane, sharing, phase);
        if (entry === undefined) continue;
        const accountId = accountOfLane(lane);
        const own =
          runningNow(entry.model) < limits.modelLimit(entry.model) && (limits.upstreamOpen?.(entry.model) ?? true);
        const placement = limits.place?.(entry, own);
        claimed.push(
          placement === undefined
            ? { reqId: entry.reqId, accountId, model: entry.model }
            : { reqId: entry.reqId, accountId, model: entry.model, placement },
        );
        taken.add(entry.reqId);
        add(perModel, entry.model);
        if (isBatchLane(lane)) add(perModel, `\u0000batch\u0000${entry.model}`);
        add(perAccount, accountId);
        add(perAccount, `${accountId}\u0000${entry.model}`);
        lastAccount = lane;
        if (claimed.length >= limits.free) {
          full = true;
          break;
        }
      }
      if (claimed.length === before) break;
    }
  };
  const anyDeferred = () => {
    for (const cursor of cursors.values()) if (cursor.deferred.length > 0) return true;
    return false;
  };
  for (const [phase, sharing] of passes) {
    if (full) break;
    if (sharing || anyDeferred()) rounds(sharing, phase);
  }
  // What the share or a tier still holds back waits for a worker that comes free.
  if (anyDeferred() || [...cursors.values()].some((cursor) => cursor.held !== undefined)) leftBehind = true;
  // Close the database cursors left open part-way.
  for (const cursor of cursors.values()) cursor.entries.return?.();
  return { claimed, lastAccount, nextAvailableAt, exhausted: !full && !leftBehind };
};
