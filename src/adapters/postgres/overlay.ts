import type { QueuedEntry } from '../../domain/claimFairly.js';
import { usageKeyString } from '../../domain/usage/hourlyUsage.js';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { accountsInTurn } from '../../storage/accountsInTurn.js';
import type { DailyUsage, IndexKey, IndexName, ViewAccess } from '../../storage/projection.js';
import type { BatchTarget } from '../../storage/writeBatch.js';
import { compareIds, type Fetched, pairKey } from './fetched.js';
import type { Writes } from './writes.js';

/**
 * What a batch's deciding reads, fetched from PostgreSQL inside the batch's transaction, and what its projection
 * writes, gathered for a few bulk statements: `storage/writeBatch.ts` decides synchronously, so everything it may read
 * is fetched before it runs. What the store guesses a batch reads (prefetch.ts) is fetched first; a read
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

export { compareIds, defaultFetchSizes, Fetched, type FetchSizes, pairKey } from './fetched.js';
export type { Need } from './need.js';
export { type RequestWrite, Writes } from './writes.js';

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
