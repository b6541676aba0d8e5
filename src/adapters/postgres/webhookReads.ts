import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { releaseScan } from '../../domain/webhook/recovery.js';
import type { DueDeliveries, ReadModel } from '../../ports/Store.js';
import { dueEndpointScan } from '../../storage/webhookReads.js';
import { type Query, sql } from './db.js';

type WebhookReads = Pick<
  ReadModel,
  | 'webhookEndpoint'
  | 'webhookEndpointsOf'
  | 'webhookDelivery'
  | 'webhookDeliveriesOf'
  | 'dueWebhookDeliveries'
  | 'webhookBacklog'
>;

/** `released`: past `now`, but made due by its endpoint's recovery (domain/webhook/recovery.ts). */
type DueRow = { endpoint_id: string; delivery_id: string; due_at: number; released: boolean };

/**
 * The webhook reads over the webhook tables (schema.ts, migration 6), each one statement, with the answers of the
 * shared reads of the ordered-map stores (storage/webhookReads.ts).
 */
export const webhookReadsOf = (query: Query): WebhookReads => ({
  webhookEndpoint: async (endpointId) =>
    (
      await query<{ state: WebhookEndpointState }[]>(sql`
        SELECT state FROM webhook_endpoints WHERE endpoint_id = ${endpointId}`)
    )[0]?.state,
  webhookEndpointsOf: async (accountId) =>
    (
      await query<{ state: WebhookEndpointState }[]>(sql`
        SELECT state FROM webhook_endpoints WHERE account_id = ${accountId} AND listed
        ORDER BY created_at, endpoint_id`)
    ).map((row) => row.state),
  webhookDelivery: async (deliveryId) =>
    (
      await query<{ state: DeliveryState }[]>(sql`
        SELECT state FROM webhook_deliveries WHERE delivery_id = ${deliveryId}`)
    )[0]?.state,
  webhookDeliveriesOf: async (endpointId, { before, limit }) => {
    if (!(limit > 0)) return [];
    const rows =
      before === undefined
        ? await query<{ state: DeliveryState }[]>(sql`
            SELECT state FROM webhook_deliveries WHERE endpoint_id = ${endpointId}
            ORDER BY created_at DESC, delivery_id DESC LIMIT ${limit}`)
        : await query<{ state: DeliveryState }[]>(sql`
            SELECT state FROM webhook_deliveries
            WHERE endpoint_id = ${endpointId}
              AND (created_at, delivery_id) < (${before.createdAt}::bigint, ${before.deliveryId}::text COLLATE "C")
            ORDER BY created_at DESC, delivery_id DESC LIMIT ${limit}`);
    return rows.map((row) => row.state);
  },
  dueWebhookDeliveries: async (now, { after, perEndpoint, limit, passOver }): Promise<DueDeliveries> => {
    if (!(limit > 0)) return { due: [] };
    // Each endpoint's first rows of the due index, enough for what one endpoint may give (and the row after, which
    // tells when it has one due next).
    const perLook = Math.max(0, Math.min(perEndpoint, limit)) + 1;
    // The endpoints with deliveries in the due index, in turn: those after `after` (a loose index scan, one seek
    // each), then, wrapping round, those up to it; `dueEndpointScan` at most. Then each one's earliest.
    const rows = await query<DueRow[]>(sql`
      WITH RECURSIVE later(endpoint_id, n) AS (
        (SELECT endpoint_id, 1 FROM webhook_deliveries
          WHERE due_at IS NOT NULL AND endpoint_id > ${after ?? ''}::text COLLATE "C"
          ORDER BY endpoint_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
          WHERE d.due_at IS NOT NULL AND d.endpoint_id > l.endpoint_id ORDER BY d.endpoint_id LIMIT 1), l.n + 1
        FROM later l WHERE l.endpoint_id IS NOT NULL AND l.n < ${dueEndpointScan}
      ), earlier(endpoint_id, n) AS (
        (SELECT endpoint_id, 1 FROM webhook_deliveries
          WHERE ${after !== undefined} AND due_at IS NOT NULL AND endpoint_id <= ${after ?? ''}::text COLLATE "C"
          ORDER BY endpoint_id LIMIT 1)
        UNION ALL
        SELECT (SELECT d.endpoint_id FROM webhook_deliveries d
          WHERE d.due_at IS NOT NULL AND d.endpoint_id > e.endpoint_id
            AND d.endpoint_id <= ${after ?? ''}::text COLLATE "C"
          ORDER BY d.endpoint_id LIMIT 1), e.n + 1
        FROM earlier e WHERE e.endpoint_id IS NOT NULL AND e.n < ${dueEndpointScan}
      ), looked AS (
        SELECT endpoint_id, lap, n FROM (
          SELECT endpoint_id, 0 AS lap, n FROM later WHERE endpoint_id IS NOT NULL
          UNION ALL
          SELECT endpoint_id, 1 AS lap, n FROM earlier WHERE endpoint_id IS NOT NULL
        ) t ORDER BY lap, n LIMIT ${dueEndpointScan}
      )
      SELECT l.endpoint_id, q.delivery_id, q.due_at, q.released
      FROM looked l CROSS JOIN LATERAL (
        (SELECT delivery_id, due_at, false AS released FROM webhook_deliveries
        WHERE endpoint_id = l.endpoint_id AND due_at IS NOT NULL
        ORDER BY due_at, delivery_id LIMIT ${perLook}::int)
        UNION ALL
        -- An endpoint that recovered and answers since: its deliveries waiting for a retry after failing before the
        -- recovery, not released before (recovery.ts, releasedByRecovery), among its next releaseScan entries.
        (SELECT r.delivery_id, r.due_at, true FROM webhook_endpoints e CROSS JOIN LATERAL (
          SELECT delivery_id, due_at, state FROM webhook_deliveries
          WHERE endpoint_id = e.endpoint_id AND due_at > ${now}::bigint
          ORDER BY due_at, delivery_id LIMIT ${releaseScan}::int
        ) r
        WHERE e.endpoint_id = l.endpoint_id AND e.state->>'status' = 'enabled'
          AND e.state->>'failingSince' IS NULL AND e.state->>'recoveredAt' IS NOT NULL
          AND r.state->>'status' = 'waiting' AND r.state->'context'->>'releasedAt' IS NULL
          AND (r.state->'context'->>'giveUpAt')::bigint > ${now}::bigint
          AND (r.state->'context'->>'lastAttemptAt')::bigint <= (e.state->>'recoveredAt')::bigint
        ORDER BY r.due_at, r.delivery_id LIMIT ${perLook}::int)
      ) q
      ORDER BY l.lap, l.n, q.released, q.due_at, q.delivery_id`);
    // As storage/webhookReads.ts takes them from the index.
    const due: { deliveryId: string; endpointId: string }[] = [];
    let next: number | undefined;
    let current: string | undefined;
    let endpoints = 0;
    let taken = 0;
    let done = false;
    /** Delivery ids taken of the current endpoint (a released one may also be among its first rows). */
    const takenHere = new Set<string>();
    for (const { endpoint_id, delivery_id, due_at, released } of rows) {
      if (endpoint_id !== current) {
        if (due.length >= limit) break;
        current = endpoint_id;
        endpoints++;
        taken = 0;
        takenHere.clear();
        done = passOver?.(endpoint_id) ?? false;
      }
      if (passOver?.(endpoint_id) === true || takenHere.has(delivery_id)) continue;
      if (released) {
        if (taken >= perEndpoint || due.length >= limit) continue;
        due.push({ deliveryId: delivery_id, endpointId: endpoint_id });
        takenHere.add(delivery_id);
        taken++;
        continue;
      }
      if (done) continue;
      if (due_at > now) {
        if (next === undefined || due_at < next) next = due_at;
        done = true;
        continue;
      }
      if (taken >= perEndpoint || due.length >= limit) {
        done = true;
        continue;
      }
      due.push({ deliveryId: delivery_id, endpointId: endpoint_id });
      takenHere.add(delivery_id);
      taken++;
    }
    // Stopped by a bound: `limit`, or the statement's `dueEndpointScan` endpoints (more may wait beyond them).
    const stopped = due.length >= limit || endpoints >= dueEndpointScan;
    return {
      due,
      ...(next === undefined ? {} : { next }),
      ...(stopped && current !== undefined ? { stoppedAt: current } : {}),
    };
  },
  webhookBacklog: async (endpointId, limit) => {
    const [row] = await query<{ waiting: number; next_at: number | null }[]>(sql`
      SELECT count(*)::int AS waiting, min(due_at) AS next_at FROM (
        SELECT due_at FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND due_at IS NOT NULL
        ORDER BY due_at LIMIT ${Math.max(0, limit) + 1}::int
      ) t`);
    const counted = row?.waiting ?? 0;
    const nextAt = row?.next_at;
    return {
      waiting: Math.min(counted, limit),
      truncated: counted > limit,
      ...(nextAt === null || nextAt === undefined ? {} : { nextAttemptAt: Number(nextAt) }),
    };
  },
});
