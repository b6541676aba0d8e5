import { CsrfField } from './CsrfField.js';
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
  <div class="table-wrap">
    <table class="stack deliveries">
      <caption class="visually-hidden">Deliveries to this endpoint, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Delivery</th>
          <th scope="col">Event</th>
          <th scope="col">About</th>
          <th scope="col">Status</th>
          <th scope="col">Last attempt</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {props.deliveries.map((row) => (
          <tr id={row.id}>
            <td data-label="Delivery">
              <code class="id">{row.id}</code>
            </td>
            <td data-label="Event">
              <code>{row.eventType}</code>
            </td>
            <td data-label="About">
              {row.dataHref === undefined ? (
                <code class="id">{row.dataId}</code>
              ) : (
                <a class="id" href={row.dataHref}>
                  {row.dataId}
                </a>
              )}
            </td>
            <td data-label="Status">
              <span class="lines">
                <span class={`badge delivery-${row.status}`}>{statusWords[row.status]}</span>
                {row.gaveUpReason !== undefined && <span class="reason">{row.gaveUpReason}</span>}
                <span class="attempts">{plural(row.attempts, 'attempt')}</span>
              </span>
            </td>
            <td data-label="Last attempt">
              <LastAttempt row={row} />
            </td>
            <td>
              <Redeliver csrf={props.csrf} endpointId={props.endpointId} row={row} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);
