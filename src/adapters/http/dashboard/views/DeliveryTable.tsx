import { CsrfField } from './CsrfField.js';
import { DataTable } from './DataTable.js';
import { grouped, plural } from './format.js';
import { Time } from './Time.js';
import type { DeliveryRow, DeliveryStatusView } from './viewModels.js';
import { webhookPath } from './WebhookTable.js';

const statusWords: Record<DeliveryStatusView, string> = {
  waiting: 'waiting',
  sending: 'sending',
  delivered: 'delivered',
  gave_up: 'gave up',
};

/** Where a delivery's Redeliver button posts. */
export const redeliverPath = (endpointId: string, deliveryId: string) =>
  `${webhookPath(endpointId)}/deliveries/${encodeURIComponent(deliveryId)}/redeliver`;

const Redeliver = ({ csrf, endpointId, row }: { csrf: string; endpointId: string; row: DeliveryRow }) =>
  row.status === 'delivered' || row.status === 'gave_up' ? (
    <form method="post" action={redeliverPath(endpointId, row.id)}>
      <CsrfField token={csrf} />
      <button type="submit" class="secondary" aria-label={`Redeliver ${row.id}`}>
        Redeliver
      </button>
    </form>
  ) : undefined;

/** The last attempt's outcome: when, the HTTP status and latency, and why it failed. */
const LastAttempt = ({ row }: { row: DeliveryRow }) => {
  if (row.lastAttemptAt === undefined) return <span class="muted">none yet</span>;
  const answer = [
    row.lastStatus === undefined ? 'no answer' : `HTTP ${row.lastStatus}`,
    row.lastLatencyMs === undefined ? undefined : `${grouped(row.lastLatencyMs)} ms`,
  ].filter((part) => part !== undefined);
  return (
    <span class="lines">
      <Time at={row.lastAttemptAt} seconds />
      <span class="outcome">{answer.join(' · ')}</span>
      {row.lastError !== undefined && <span class="error-text">{row.lastError}</span>}
    </span>
  );
};

/**
 * An endpoint's deliveries, newest first: the `webhook-id`, the event and what it is about, where it stands and after
 * how many attempts, its last attempt's outcome, and Redeliver for one that is delivered or given up.
 */
export const DeliveryTable = (props: { csrf: string; endpointId: string; deliveries: readonly DeliveryRow[] }) => (
  <DataTable
    caption="Deliveries to this endpoint, newest first"
    stacked
    class="deliveries"
    rows={props.deliveries}
    rowId={(row) => row.id}
    columns={[
      { header: 'Delivery', cell: (row) => <code class="id">{row.id}</code> },
      { header: 'Event', cell: (row) => <code>{row.eventType}</code> },
      {
        header: 'About',
        cell: (row) =>
          row.dataHref === undefined ? (
            <code class="id">{row.dataId}</code>
          ) : (
            <a class="id" href={row.dataHref}>
              {row.dataId}
            </a>
          ),
      },
      {
        header: 'Status',
        cell: (row) => (
          <span class="lines">
            <span class={`badge delivery-${row.status}`}>{statusWords[row.status]}</span>
            {row.gaveUpReason !== undefined && <span class="reason">{row.gaveUpReason}</span>}
            <span class="attempts">{plural(row.attempts, 'attempt')}</span>
          </span>
        ),
      },
      { header: 'Last attempt', cell: (row) => <LastAttempt row={row} /> },
      {
        header: 'Actions',
        actions: true,
        cell: (row) => <Redeliver csrf={props.csrf} endpointId={props.endpointId} row={row} />,
      },
    ]}
  />
);
