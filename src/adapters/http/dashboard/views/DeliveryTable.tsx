import { CsrfField } from './CsrfField.js';
import { DataTable } from './DataTable.js';
import { grouped, plural } from './format.js';
import { Time } from './Time.js';
import type { AttemptRow, DeliveryRow, DeliveryStatusView } from './viewModels.js';
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

/** One attempt's outcome: when, the HTTP status and latency, and why it failed. */
const AttemptOutcome = ({ attempt }: { attempt: AttemptRow }) => {
  const answer = [
    attempt.status === undefined ? 'no answer' : `HTTP ${attempt.status}`,
    attempt.latencyMs === undefined ? undefined : `${grouped(attempt.latencyMs)} ms`,
  ].filter((part) => part !== undefined);
  return (
    <span class="lines">
      <Time at={attempt.at} seconds />
      <span class="outcome">{answer.join(' · ')}</span>
      {attempt.error !== undefined && <span class="error-text">{attempt.error}</span>}
    </span>
  );
};

/** Every attempt the delivery keeps, oldest first (issue 42: not only the last, as Stripe and Svix show them). */
const Attempts = ({ row }: { row: DeliveryRow }) => {
  if (row.recentAttempts.length === 0) return <span class="muted">none yet</span>;
  const older = row.attempts - row.recentAttempts.length;
  return (
    <span class="lines">
      {older > 0 && <span class="muted">{plural(older, 'earlier attempt')} not shown</span>}
      <ol class="attempt-list">
        {row.recentAttempts.map((attempt) => (
          <li value={String(attempt.attempt)}>
            <AttemptOutcome attempt={attempt} />
          </li>
        ))}
      </ol>
    </span>
  );
};

/**
 * An endpoint's deliveries, newest first: the `webhook-id`, the event and what it is about, where it stands and after
 * how many attempts, each attempt's outcome, and Redeliver for one that is delivered or given up.
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
      { header: 'Attempts', cell: (row) => <Attempts row={row} /> },
      {
        header: 'Actions',
        actions: true,
        cell: (row) => <Redeliver csrf={props.csrf} endpointId={props.endpointId} row={row} />,
      },
    ]}
  />
);
