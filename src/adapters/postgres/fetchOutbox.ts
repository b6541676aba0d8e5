/** The endpoints of accounts and what the outbox reads when requests or batches end, fetched in one statement. */
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import type { WebhookEndpointState } from '../../domain/webhook/endpoint.js';
import { type Query, sql } from './db.js';
import { compareIds, type Fetched } from './fetched.js';
import { type Need, ofKind, unique } from './need.js';
import { deliveryPrefixOf } from './webhookRows.js';

/**
 * The endpoints of accounts, and what the outbox reads when requests or batches end (Need `outboxOf`), in ONE
 * statement: the accounts of the ending requests and batches, their endpoints not removed, and, for the sources whose
 * account has endpoints, every delivery already made of their events (by id prefix; on the hot path none). An account
 * without endpoints, the common case, costs this one small statement per batch and nothing more.
 */
export const fetchOutbox = (query: Query, fetched: Fetched, needs: readonly Need[], work: Promise<void>[]) => {
  const accounts = unique(ofKind(needs, 'webhookEndpointsOf').map((need) => need.id)).filter(
    (id) => !fetched.webhookEndpointsOf.has(id),
  );
  const sources = ofKind(needs, 'outboxOf');
  const requests = unique(sources.filter((need) => need.source === 'request').map((need) => need.id));
  const batches = unique(sources.filter((need) => need.source === 'batch').map((need) => need.id));
  if (accounts.length + requests.length + batches.length === 0) return;
  type Row = { kind: 'account' | 'endpoint' | 'prefix' | 'delivery'; id: string; state: unknown };
  work.push(
    query<Row[]>(sql`
      WITH sources AS (
        SELECT r.account_id, u.prefix
        FROM unnest(${requests}::text[], ${requests.map(deliveryPrefixOf)}::text[]) AS u(id, prefix)
        JOIN requests r ON r.req_id = u.id
        UNION ALL
        SELECT b.account_id, u.prefix
        FROM unnest(${batches}::text[], ${batches.map(deliveryPrefixOf)}::text[]) AS u(id, prefix)
        JOIN batches b ON b.batch_id = u.id
      ), accounts AS (
        SELECT account_id FROM sources UNION SELECT a COLLATE "C" FROM unnest(${accounts}::text[]) AS a
      ), endpoints AS (
        SELECT e.endpoint_id, e.state FROM accounts a JOIN webhook_endpoints e ON e.account_id = a.account_id
        WHERE e.listed
      ), prefixes AS (
        SELECT DISTINCT s.prefix FROM sources s
        WHERE EXISTS (SELECT 1 FROM webhook_endpoints e WHERE e.account_id = s.account_id AND e.listed)
      )
      SELECT 'account' AS kind, account_id AS id, NULL::json AS state FROM accounts
      UNION ALL SELECT 'endpoint', endpoint_id, state FROM endpoints
      UNION ALL SELECT 'prefix', prefix, NULL FROM prefixes
      UNION ALL
      SELECT 'delivery', d.delivery_id, d.state FROM prefixes p JOIN webhook_deliveries d
        ON d.delivery_id >= p.prefix COLLATE "C" AND d.delivery_id < (p.prefix || chr(1114111)) COLLATE "C"`).then(
      (rows) => {
        const endpointsOf = new Map<string, WebhookEndpointState[]>();
        for (const row of rows) {
          if (row.kind === 'account') endpointsOf.set(row.id, []);
          else if (row.kind === 'endpoint') {
            const state = row.state as WebhookEndpointState;
            fetched.webhookEndpoints.set(row.id, state);
            const ofAccount = endpointsOf.get(state.accountId);
            if (ofAccount === undefined) endpointsOf.set(state.accountId, [state]);
            else ofAccount.push(state);
          } else if (row.kind === 'prefix') {
            fetched.deliveryPrefixes.add(row.id);
            fetched.deliveryPrefixLengths.add(row.id.length);
          } else fetched.webhookDeliveries.set(row.id, row.state as DeliveryState);
        }
        for (const [accountId, states] of endpointsOf)
          fetched.webhookEndpointsOf.set(
            accountId,
            states
              .sort((a, b) => a.createdAt - b.createdAt || compareIds(a.endpointId, b.endpointId))
              .map((state) => state.endpointId),
          );
      },
    ),
  );
};
