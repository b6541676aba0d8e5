/** The committed state a batch's deciding has read so far (`Fetched`), how much one fetch reads, and how ids order. */
import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import { type QueuedEntry, scanLimit } from '../../domain/claimFairly.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { RequestState } from '../../domain/request/state.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import type { Need } from './need.js';

export const pairKey = (a: string, b: string) => `${a}\u0000${b}`;

/** An interval of lanes (`lo` exclusive, `hi` inclusive; `hi` null: no end) whose lanes with waiting requests are
 * known. */
type Covered = { lo: string; hi: string | null };

/** How much one fetch of the queue reads (tests make them tiny, so that every way of fetching more is taken). */
export type FetchSizes = {
  /** Lanes with waiting requests read at once. */
  readonly accounts: number;
  /** Waiting requests of one lane read at once when a claim needs more of them. */
  readonly queue: number;
  /** Waiting requests read with each lane at first (most claims take one or two per lane). */
  readonly firstEntries: number;
};

export const defaultFetchSizes: FetchSizes = {
  accounts: 64,
  // claimFairly's scanLimit, plus the read that finds it full.
  queue: scanLimit + 1,
  firstEntries: 4,
};

/** The committed state a batch's deciding has read so far: `null` is "fetched: absent". */
export class Fetched {
  constructor(readonly sizes: FetchSizes = defaultFetchSizes) {}

  readonly requests = new Map<string, RequestState | null>();
  readonly accounts = new Map<string, AccountState | null>();
  readonly keys = new Map<string, KeyState | null>();
  readonly sessions = new Map<string, SessionState | null>();
  readonly emails = new Map<string, string | null>();
  readonly credentials = new Map<string, string | null>();
  readonly batches = new Map<string, BatchView | null>();
  readonly files = new Map<string, FileState | null>();
  readonly uploads = new Map<string, AccountUploads | null>();
  readonly idempotency = new Map<string, string | null>();
  readonly sessionsOf = new Map<string, readonly string[]>();
  readonly queuedCounts = new Map<string, number>();
  readonly processingCounts = new Map<string, number>();
  readonly accountCounts = new Map<string, number>();
  readonly webhookEndpoints = new Map<string, WebhookEndpointState | null>();
  readonly webhookDeliveries = new Map<string, DeliveryState | null>();
  /** Ids of an account's endpoints that are not removed, by creation time (their views: `webhookEndpoints`). */
  readonly webhookEndpointsOf = new Map<string, readonly string[]>();
  /** Prefixes of delivery ids whose every delivery was read (deliveryPrefixOf), and their lengths. */
  readonly deliveryPrefixes = new Set<string>();
  readonly deliveryPrefixLengths = new Set<number>();
  /** Every model's count was read (a model without a row has none being processed). */
  allProcessingCounts = false;
  anyWaiting: boolean | undefined;
  readonly lapsed = new Map<string, readonly string[]>();
  /** Lanes with waiting requests, sorted, known within `covered`. */
  waitingAccounts: string[] = [];
  covered: Covered[] = [];
  readonly queues = new Map<string, { entries: QueuedEntry[]; complete: boolean }>();
  /** What the last deciding needed and did not find. */
  needs: Need[] = [];

  /**
   * Records that a read needed `need`, and answers it for now with `provisional`: the deciding goes on (so that one
   * round finds as many needs as it can), and its result is thrown away, as every result of a round with needs is.
   */
  miss<T>(need: Need, provisional: T): T {
    this.needs.push(need);
    return provisional;
  }

  /** A delivery as read (undefined: absent), or a miss: read by its id, or absent as one of a prefix read whole. */
  delivery(deliveryId: string): DeliveryState | undefined {
    const value = this.webhookDeliveries.get(deliveryId);
    if (value !== undefined) return value ?? undefined;
    for (const length of this.deliveryPrefixLengths)
      if (this.deliveryPrefixes.has(deliveryId.slice(0, length))) return undefined;
    return this.miss({ kind: 'webhookDelivery', id: deliveryId }, undefined);
  }

  known<V>(map: Map<string, V | null>, id: string, need: Need): V | undefined {
    const value = map.get(id);
    if (value === undefined) return this.miss(need, undefined);
    return value ?? undefined;
  }

  /** Adds lanes with waiting requests found after `after` (a full page: `complete` false). */
  addAccounts(after: string, found: readonly string[], complete: boolean) {
    const merged = new Set([...this.waitingAccounts, ...found]);
    this.waitingAccounts = [...merged].sort(compareIds);
    const hi = complete ? null : (found.at(-1) ?? null);
    const intervals = [...this.covered, { lo: after, hi }].sort((a, b) => compareIds(a.lo, b.lo));
    const joined: Covered[] = [];
    for (const next of intervals) {
      const last = joined.at(-1);
      if (last !== undefined && (last.hi === null || compareIds(next.lo, last.hi) <= 0)) {
        if (last.hi !== null && (next.hi === null || compareIds(next.hi, last.hi) > 0)) last.hi = next.hi;
      } else joined.push({ ...next });
    }
    this.covered = joined;
  }

  /** The first lane with waiting requests after `current`, `null` when there is none, or a miss. */
  nextAccount(current: string): string | null {
    const interval = this.covered.find(
      ({ lo, hi }) => compareIds(lo, current) <= 0 && (hi === null || compareIds(current, hi) < 0),
    );
    const more = () =>
      this.miss(
        { kind: 'accountsAfter', after: current, limit: this.sizes.accounts, entries: this.sizes.firstEntries },
        null,
      );
    if (interval === undefined) return more();
    const next = this.waitingAccounts.find((account) => compareIds(account, current) > 0);
    if (next === undefined || (interval.hi !== null && compareIds(next, interval.hi) > 0)) {
      if (interval.hi === null) return null;
      return more();
    }
    return next;
  }
}

/** Ids in code-point order, as the columns' `COLLATE "C"` (UTF-8 bytes) and LMDB's keys order them. */
export const compareIds = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
