import type { AccountState, KeyState, SessionState } from '../../domain/account/state.js';
import type { BatchView } from '../../domain/batch/state.js';
import { type QueuedEntry, scanLimit } from '../../domain/claimFairly.js';
import type { StoredEvent } from '../../domain/events.js';
import type { FileState } from '../../domain/file/state.js';
import type { AccountUploads } from '../../domain/file/uploads.js';
import type { RequestState } from '../../domain/request/state.js';
import { createTokenUseChanges } from '../../domain/tokens/tokenUse.js';
import { type UsageRow, usageKeyString } from '../../domain/usage/hourlyUsage.js';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { accountsInTurn } from '../../storage/accountsInTurn.js';
import type { DailyUsage, IndexKey, IndexName, ViewAccess } from '../../storage/projection.js';
import type { BatchTarget } from '../../storage/writeBatch.js';

/**
 * What a batch's deciding reads, fetched from PostgreSQL inside the batch's transaction, and what its projection
 * writes, gathered for a few bulk statements: `storage/writeBatch.ts` decides synchronously, so everything it may read
 * is fetched before it runs. What the store guesses a batch reads (`prefetchOf` in batch.ts) is fetched first; a read
 * of anything not fetched records what it needed (answering for now with a stand-in, so that one round finds as much
 * as it can), and the store then fetches that too and decides the whole batch again from the start (deciding is pure;
 * nothing was written yet). Only a round that needed nothing more is written. So a decision is always
 * made against what the database holds, never against a guess, and the overlay holds no more than the batch touches
 * (memory does not grow with the stored data).
 *
 * Like the LMDB and memory stores, reads for deciding see the committed state for requests and their indexes (the
 * batch's own request changes are projected after its last command: writeBatch keeps them meanwhile), and so for
 * batches' views (writeBatch keeps working copies, written after the last command), and the batch's own writes for
 * accounts, keys, sessions, credentials, files, accounts' uploads and account indexes (projected command by command),
 * and webhook endpoints and deliveries (projected command by command too: an endpoint added by a command is seen by
 * the outbox of the commands after it).
 */

/** Something a read needed that was not fetched yet. */
export type Need =
  | { readonly kind: 'request'; readonly id: string }
  | { readonly kind: 'account'; readonly id: string }
  | { readonly kind: 'key'; readonly id: string }
  | { readonly kind: 'session'; readonly id: string }
  | { readonly kind: 'email'; readonly id: string }
  | { readonly kind: 'credential'; readonly id: string }
  | { readonly kind: 'batch'; readonly id: string }
  | { readonly kind: 'file'; readonly id: string }
  /** An account's uploads whose reservation has not ended (domain/file/uploads.ts). */
  | { readonly kind: 'uploads'; readonly id: string }
  | { readonly kind: 'idempotency'; readonly accountId: string; readonly key: string }
  | { readonly kind: 'sessionsOf'; readonly id: string }
  | { readonly kind: 'queuedCount'; readonly id: string }
  | { readonly kind: 'processingCount'; readonly id: string }
  /** An account's counter (domain/accountCounters.ts). */
  | { readonly kind: 'accountCount'; readonly id: string }
  /** Every model's count of requests being processed (a row per model: what a claim reads). */
  | { readonly kind: 'processingCounts' }
  | { readonly kind: 'anyWaiting' }
  | { readonly kind: 'lapsed'; readonly now: number; readonly limit: number }
  /** Dispatch lanes (an account's own, or its batch lane: domain/batch/lines.ts) with waiting requests after `after`
   * ('' : from the first), up to `limit` of them, and the first `entries` waiting requests of each (with their states
   * and their accounts' views). */
  | { readonly kind: 'accountsAfter'; readonly after: string; readonly limit: number; readonly entries: number }
  /** A lane's first `limit` waiting requests (with their states). */
  | { readonly kind: 'queuedOf'; readonly id: string; readonly limit: number }
  | { readonly kind: 'webhookEndpoint'; readonly id: string }
  /** A delivery, with its endpoint (what a delivery command reads). */
  | { readonly kind: 'webhookDelivery'; readonly id: string }
  /** An account's endpoints that are not removed (with their views). */
  | { readonly kind: 'webhookEndpointsOf'; readonly id: string }
  /**
   * What the outbox reads when a request or batch (`id`) ends (domain/webhook/commands.ts, webhookDeliveriesFor): its
   * account's endpoints and, where it has some, the deliveries already made for the source's events (found by their
   * ids' prefix, deliveryPrefixOf). All such needs of a round are one statement.
   */
  | { readonly kind: 'outboxOf'; readonly source: 'request' | 'batch'; readonly id: string };

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

/** A request's change as the batch leaves it: its state, and its text (absent: whatever it held, if it keeps any). */
export type RequestWrite = { readonly state: RequestState; readonly text: string | undefined; readonly isNew: boolean };

/** What a batch writes, gathered while it is decided and projected. */
export class Writes {
  readonly requests = new Map<string, RequestWrite>();
  readonly accounts = new Map<string, AccountState>();
  readonly keys = new Map<string, KeyState>();
  /** `undefined`: the session ended (its row goes). */
  readonly sessions = new Map<string, SessionState | undefined>();
  readonly credentials = new Map<string, string | undefined>();
  readonly emails = new Map<string, string>();
  readonly keyHashes = new Map<string, string>();
  /** Batches' views as the batch leaves them (their rows' index columns follow from them: batchColumns). */
  readonly batches = new Map<string, BatchView>();
  /** `undefined`: the file was deleted (its row goes). */
  readonly files = new Map<string, FileState | undefined>();
  /** An account's uploads by account id; `undefined`: none left (its row goes). */
  readonly uploads = new Map<string, AccountUploads | undefined>();
  /** `undefined`: the entry goes. */
  readonly idempotency = new Map<string, { accountId: string; key: string; reqId: string | undefined }>();
  /** Sessions started (true) or ended (false) by this batch, by [accountId, sessionId]. */
  readonly accountSessions = new Map<string, boolean>();
  readonly queuedDeltas = new Map<string, number>();
  readonly processingDeltas = new Map<string, number>();
  readonly accountDeltas = new Map<string, number>();
  readonly usage = new Map<string, { accountId: string; day: number; input: number; output: number }>();
  /** Tokens added to accounts' token buckets (domain/tokens/tokenUse.ts). */
  readonly tokens = createTokenUseChanges();
  /** Rows of the hourly usage view this batch adds to (storage/hourlyUsage.ts), by `usageKeyString`. */
  readonly hourlyUsage = new Map<string, UsageRow>();
  readonly webhookEndpoints = new Map<string, WebhookEndpointState>();
  readonly webhookDeliveries = new Map<string, DeliveryState>();
  accountsVersionBumps = 0;
  events: StoredEvent[] = [];
  lastSeq: number | undefined;
}

const add = (map: Map<string, number>, key: string, delta: number) => map.set(key, (map.get(key) ?? 0) + delta);

/** The target writeBatch decides and projects through: reads from `fetched` (and `writes`, as said above). */
export const overlayTarget = (
  fetched: Fetched,
  writes: Writes,
  options: { readonly webhookRetentionMs?: number | undefined } = {},
): BatchTarget => {
  const webhookRetentionMs = options.webhookRetentionMs ?? defaultWebhookBackoff.maxTotalMs;
  const indexKeyOf = (index: IndexName, key: IndexKey): string => {
    if (index === 'idempotency' || index === 'accountSessions') {
      const [first, second] = key as [string, string];
      return pairKey(first, second);
    }
    return String(key);
  };
  const idempotent = (accountId: string, key: string): string | undefined => {
    const written = writes.idempotency.get(pairKey(accountId, key));
    if (written !== undefined) return written.reqId;
    return fetched.known(fetched.idempotency, pairKey(accountId, key), { kind: 'idempotency', accountId, key });
  };
  const committedRequest = (reqId: string) => fetched.known(fetched.requests, reqId, { kind: 'request', id: reqId });

  const views: ViewAccess = {
    getBatch: (batchId) =>
      writes.batches.get(batchId) ?? fetched.known(fetched.batches, batchId, { kind: 'batch', id: batchId }),
    putBatch: (batchId, view) => void writes.batches.set(batchId, view),
    getFile: (fileId) =>
      writes.files.has(fileId)
        ? writes.files.get(fileId)
        : fetched.known(fetched.files, fileId, { kind: 'file', id: fileId }),
    putFile: (fileId, state) => void writes.files.set(fileId, state),
    getUploads: (accountId) =>
      writes.uploads.has(accountId)
        ? writes.uploads.get(accountId)
        : fetched.known(fetched.uploads, accountId, { kind: 'uploads', id: accountId }),
    putUploads: (accountId, uploads) => void writes.uploads.set(accountId, uploads),
    getWebhookEndpoint: (endpointId) =>
      writes.webhookEndpoints.get(endpointId) ??
      fetched.known(fetched.webhookEndpoints, endpointId, { kind: 'webhookEndpoint', id: endpointId }),
    putWebhookEndpoint: (endpointId, state) => void writes.webhookEndpoints.set(endpointId, state),
    getWebhookDelivery: (deliveryId) => writes.webhookDeliveries.get(deliveryId) ?? fetched.delivery(deliveryId),
    putWebhookDelivery: (deliveryId, state) => void writes.webhookDeliveries.set(deliveryId, state),
    getRequest: (reqId) => writes.requests.get(reqId)?.state ?? committedRequest(reqId),
    putRequest: (reqId, state, text) => {
      const isNew = committedRequest(reqId) === undefined && !writes.requests.has(reqId);
      const earlier = writes.requests.get(reqId);
      writes.requests.set(reqId, { state, text: text ?? earlier?.text, isNew: earlier?.isNew ?? isNew });
    },
    getAccount: (accountId) =>
      writes.accounts.get(accountId) ?? fetched.known(fetched.accounts, accountId, { kind: 'account', id: accountId }),
    putAccount: (accountId, state) => void writes.accounts.set(accountId, state),
    getKey: (keyId) => writes.keys.get(keyId) ?? fetched.known(fetched.keys, keyId, { kind: 'key', id: keyId }),
    putKey: (keyId, state) => void writes.keys.set(keyId, state),
    getIndex: (index, key) => {
      if (index === 'idempotency') {
        const [accountId, idempotencyKey] = key as [string, string];
        return idempotent(accountId, idempotencyKey);
      }
      if (index === 'emails') return emailOf(String(key));
      throw new Error(`the PostgreSQL store does not read the ${index} index while writing`);
    },
    putIndex: (index, key, value) => {
      if (index === 'emails') writes.emails.set(String(key), value);
      else if (index === 'keyHashes') writes.keyHashes.set(String(key), value);
      else if (index === 'accountSessions') writes.accountSessions.set(indexKeyOf(index, key), true);
      else if (index === 'idempotency') {
        const [accountId, idempotencyKey] = key as [string, string];
        writes.idempotency.set(pairKey(accountId, idempotencyKey), { accountId, key: idempotencyKey, reqId: value });
      }
      // dispatch, accountRequests, accountKeys, accountBatches, accountFiles, accountFilesByPurpose, accountOpenBatches,
      // openBatchInputs, accountWebhookEndpoints, webhookDue, endpointWebhookDeliveries: columns of the request, key,
      // batch, file and webhook rows (schema.ts), written with them.
    },
    removeIndex: (index, key) => {
      if (index === 'accountSessions') writes.accountSessions.set(indexKeyOf(index, key), false);
      else if (index === 'idempotency') {
        const [accountId, idempotencyKey] = key as [string, string];
        writes.idempotency.set(pairKey(accountId, idempotencyKey), {
          accountId,
          key: idempotencyKey,
          reqId: undefined,
        });
      } else if (index === 'emails' || index === 'keyHashes')
        throw new Error(`the PostgreSQL store never removes from the ${index} index`);
    },
    // The grouped indexes (expiry, processing) are the request row's expires_at and lease_until columns.
    moveInGroup: () => {},
    putCredential: (key, value) => void writes.credentials.set(key, value),
    getSession: (sessionId) =>
      writes.sessions.has(sessionId)
        ? writes.sessions.get(sessionId)
        : fetched.known(fetched.sessions, sessionId, { kind: 'session', id: sessionId }),
    putSession: (sessionId, state) => void writes.sessions.set(sessionId, state),
    bumpAccountsVersion: () => void writes.accountsVersionBumps++,
    addQueued: (accountId, delta) => void add(writes.queuedDeltas, accountId, delta),
    addProcessing: (model, delta) => void add(writes.processingDeltas, model, delta),
    addAccountCount: (counter, delta) => void add(writes.accountDeltas, counter, delta),
    addUsage: (accountId, day, usage: DailyUsage) => {
      const key = pairKey(accountId, String(day));
      const entry = writes.usage.get(key) ?? { accountId, day, input: 0, output: 0 };
      entry.input += usage.inputTokens;
      entry.output += usage.outputTokens;
      writes.usage.set(key, entry);
    },
    addTokens: (accountId, at, tokens) => writes.tokens.add(accountId, at, tokens),
    addHourlyUsage: (row) => {
      const key = usageKeyString(row);
      const before = writes.hourlyUsage.get(key);
      writes.hourlyUsage.set(
        key,
        before === undefined
          ? row
          : {
              ...before,
              inputTokens: before.inputTokens + row.inputTokens,
              outputTokens: before.outputTokens + row.outputTokens,
              requests: before.requests + row.requests,
            },
      );
    },
  };

  /** An account's endpoints not removed, oldest first: the committed ones as this batch leaves them, and its own. */
  const webhookEndpointsOf = (accountId: string): WebhookEndpointState[] => {
    const committed =
      fetched.webhookEndpointsOf.get(accountId) ?? fetched.miss({ kind: 'webhookEndpointsOf', id: accountId }, []);
    const found = new Map<string, WebhookEndpointState>();
    for (const endpointId of committed) {
      const state = views.getWebhookEndpoint(endpointId);
      if (state !== undefined) found.set(endpointId, state);
    }
    for (const [endpointId, state] of writes.webhookEndpoints)
      if (state.accountId === accountId) found.set(endpointId, state);
    return [...found.values()]
      .filter((state) => state.status !== 'removed')
      .sort((a, b) => a.createdAt - b.createdAt || compareIds(a.endpointId, b.endpointId));
  };

  function emailOf(email: string): string | undefined {
    return writes.emails.get(email) ?? fetched.known(fetched.emails, email, { kind: 'email', id: email });
  }

  /** The lanes with waiting requests (claimFairly's accounts in turn), over the lanes fetched so far. */
  const queuedAccounts = (after: string | undefined): Iterable<string> =>
    accountsInTurn((lane) => fetched.nextAccount(lane) ?? undefined, after);

  function* queuedOf(lane: string): Iterable<QueuedEntry> {
    const queue = fetched.queues.get(lane);
    const page = fetched.sizes.queue;
    if (queue === undefined) return fetched.miss({ kind: 'queuedOf', id: lane, limit: page }, undefined);
    yield* queue.entries;
    // Read on past what was fetched: a page that grows (four times as deep each time, up to the scan's limit), as most
    // claims take a few more than the first entries, and each entry read is a request's whole state to parse.
    const more = Math.min(page, Math.max(16, 3 * queue.entries.length));
    if (!queue.complete) fetched.miss({ kind: 'queuedOf', id: lane, limit: queue.entries.length + more }, undefined);
  }

  return {
    views,
    committedRequest,
    reads: {
      batch: views.getBatch,
      file: views.getFile,
      account: views.getAccount,
      key: views.getKey,
      session: views.getSession,
      accountIdByEmail: emailOf,
      sessionsOf: (accountId) => {
        const ids = new Set(
          fetched.sessionsOf.get(accountId) ?? fetched.miss({ kind: 'sessionsOf', id: accountId }, []),
        );
        const prefix = pairKey(accountId, '');
        for (const [key, started] of writes.accountSessions) {
          if (!key.startsWith(prefix)) continue;
          const sessionId = key.slice(prefix.length);
          if (started) ids.add(sessionId);
          else ids.delete(sessionId);
        }
        return [...ids].sort(compareIds);
      },
      credential: (key) =>
        writes.credentials.has(key)
          ? writes.credentials.get(key)
          : fetched.known(fetched.credentials, key, { kind: 'credential', id: key }),
      idempotentRequest: idempotent,
      queuedCount: (accountId) =>
        fetched.queuedCounts.get(accountId) ?? fetched.miss({ kind: 'queuedCount', id: accountId }, 0),
      processingCount: (model) =>
        fetched.processingCounts.get(model) ??
        (fetched.allProcessingCounts ? 0 : fetched.miss({ kind: 'processingCount', id: model }, 0)),
      accountCount: (counter) =>
        fetched.accountCounts.get(counter) ?? fetched.miss({ kind: 'accountCount', id: counter }, 0),
      anyWaiting: () => fetched.anyWaiting ?? fetched.miss({ kind: 'anyWaiting' }, false),
      queuedAccounts,
      queuedOf,
      lapsedLeases: (now, limit) =>
        fetched.lapsed.get(`${now}:${limit}`) ?? fetched.miss({ kind: 'lapsed', now, limit }, []),
      webhookEndpointsOf,
      webhookRetentionMs: () => webhookRetentionMs,
    },
    appendLog: (lastSeq, events) => {
      writes.events = [...events];
      writes.lastSeq = lastSeq;
    },
    flush: () => {},
  };
};
