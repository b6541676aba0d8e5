import { createTokenUseChanges } from '../../domain/tokens/tokenUse.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import type { DailyUsage, GroupName } from '../../storage/projection.js';
import { decodeIds, encodeIds, encodeMap } from './codec.js';
import type { LmdbDatabases } from './databases.js';
import { waitingCountKey } from './migrations.js';
import { webhookViewsOf } from './syncReads.js';
import { writeTokenUse } from './tokenUse.js';

/** What a batch changes in the views beside its records, gathered as it is written and written once at its end. */

/**
 * Webhook views as one batch reads and changes them: each decoded once and written once, at the batch's end. A
 * delivery is read by its command's deciding and again by the projection of each of its events, and its endpoint
 * by every delivery's: decoding the same MessagePack maps over and over cost more than the rest of their writes.
 */
export const createWebhookViewChanges = (dbs: LmdbDatabases) => {
  const direct = webhookViewsOf(dbs);
  type Entry<V> = { state: V | undefined; changed: boolean };
  const endpoints = new Map<string, Entry<WebhookEndpointState>>();
  const deliveries = new Map<string, Entry<DeliveryState>>();
  const through =
    <V>(cache: Map<string, Entry<V>>, read: (id: string) => V | undefined) =>
    (id: string): V | undefined => {
      let entry = cache.get(id);
      if (entry === undefined) {
        entry = { state: read(id), changed: false };
        cache.set(id, entry);
      }
      return entry.state;
    };
  const clear = () => {
    endpoints.clear();
    deliveries.clear();
  };
  return {
    getEndpoint: through(endpoints, direct.webhookEndpoint),
    putEndpoint: (id: string, state: WebhookEndpointState) => void endpoints.set(id, { state, changed: true }),
    getDelivery: through(deliveries, direct.webhookDelivery),
    putDelivery: (id: string, state: DeliveryState) => void deliveries.set(id, { state, changed: true }),
    /** Writes what the batch changed, inside its transaction, and forgets the rest (the next batch reads afresh). */
    flush: () => {
      for (const [id, { state, changed }] of endpoints)
        if (changed && state !== undefined) dbs.webhookEndpoints.put(id, encodeMap(state));
      for (const [id, { state, changed }] of deliveries)
        if (changed && state !== undefined) dbs.webhookDeliveries.put(id, encodeMap(state));
      clear();
    },
    clear,
  };
};

/** What a batch changes in the groups of the grouped indexes, written once per group when the batch ends. */
export const createGroupChanges = (dbs: LmdbDatabases) => {
  const changes: Record<GroupName, Map<number, { added: string[]; removed: Set<string> }>> = {
    expiry: new Map(),
    processing: new Map(),
  };
  const of = (group: GroupName, key: number) => {
    let change = changes[group].get(key);
    if (change === undefined) {
      change = { added: [], removed: new Set() };
      changes[group].set(key, change);
    }
    return change;
  };
  return {
    move(group: GroupName, reqId: string, from: number | undefined, to: number | undefined) {
      if (from !== undefined) of(group, from).removed.add(reqId);
      if (to !== undefined) of(group, to).added.push(reqId);
    },
    /** Inside the batch's transaction, after its last request: one read and one write per group touched. */
    flush() {
      for (const group of ['expiry', 'processing'] as const) {
        const db = dbs.groups[group];
        for (const [key, { added, removed }] of changes[group]) {
          const stored = db.getBinaryFast(key);
          const kept = stored === undefined ? [] : decodeIds(stored).filter((reqId) => !removed.has(reqId));
          const ids = kept.length === 0 ? added : [...kept, ...added];
          if (ids.length === 0) db.remove(key);
          else db.put(key, encodeIds(ids.sort()));
        }
        changes[group].clear();
      }
    },
    clear() {
      changes.expiry.clear();
      changes.processing.clear();
    },
  };
};

/** Changes of a count view (by account, by model) in a batch, written once per key when the batch ends. */
export const createCountChanges = (db: LmdbDatabases['queuedCounts']) => {
  const deltas = new Map<string, number>();
  return {
    add: (key: string, delta: number) => void deltas.set(key, (deltas.get(key) ?? 0) + delta),
    /** The count as committed before this batch. */
    committed: (key: string) => db.get(key) ?? 0,
    flush() {
      for (const [key, delta] of deltas) {
        if (delta === 0) continue;
        const count = (db.get(key) ?? 0) + delta;
        if (count === 0) db.remove(key);
        else db.put(key, count);
      }
      deltas.clear();
    },
    clear: () => deltas.clear(),
  };
};

export type CountChanges = ReturnType<typeof createCountChanges>;

/** Usage added in a batch, per account and day, written once per pair when the batch ends; and the tokens added to
 * each account's token buckets, written once per account and bucket (old buckets pruned). */
export const createUsageChanges = (dbs: LmdbDatabases) => {
  const added = new Map<string, { accountId: string; day: number; input: number; output: number }>();
  const tokens = createTokenUseChanges();
  return {
    addTokens: tokens.add,
    add: (accountId: string, day: number, usage: DailyUsage) => {
      const key = `${accountId}\u0000${day}`;
      const entry = added.get(key) ?? { accountId, day, input: 0, output: 0 };
      entry.input += usage.inputTokens;
      entry.output += usage.outputTokens;
      added.set(key, entry);
    },
    flush() {
      for (const { accountId, day, input, output } of added.values()) {
        const [storedInput, storedOutput] = dbs.dailyUsage.get([accountId, day]) ?? [0, 0];
        dbs.dailyUsage.put([accountId, day], [storedInput + input, storedOutput + output]);
      }
      added.clear();
      for (const change of tokens.changes()) writeTokenUse(dbs, change);
      tokens.clear();
    },
    clear: () => {
      added.clear();
      tokens.clear();
    },
  };
};

/** Entries added to and removed from the dispatch index in a batch: its count (`waitingCountKey`), written once. */
export const createWaitingChanges = (dbs: LmdbDatabases) => {
  let delta = 0;
  return {
    add(change: number) {
      delta += change;
    },
    /** Whether any request waits, as committed before this batch. */
    committed: () => (dbs.meta.get(waitingCountKey) ?? 0) > 0,
    flush() {
      if (delta !== 0) dbs.meta.put(waitingCountKey, (dbs.meta.get(waitingCountKey) ?? 0) + delta);
      delta = 0;
    },
    clear() {
      delta = 0;
    },
  };
};
