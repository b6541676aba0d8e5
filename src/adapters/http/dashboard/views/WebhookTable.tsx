import { CsrfField } from './CsrfField.js';
import { DataTable } from './DataTable.js';
import { Time, TimeOrNever } from './Time.js';
import type { WebhookEndpointRow } from './viewModels.js';

/** Where the dashboard shows an endpoint and its delivery log, and where its forms post. */
export const webhookPath = (endpointId: string, action?: 'remove' | 'rotate' | 'enable' | 'recover') =>
  `/dashboard/webhooks/${encodeURIComponent(endpointId)}${action === undefined ? '' : `/${action}`}`;

/** The event types an endpoint receives, in words. */
export const EventList = ({ events }: { events: readonly string[] }) =>
  events.length === 0 ? (
    <span>all events</span>
  ) : (
    <span class="event-list">
      {events.map((type) => (
        <code>{type}</code>
      ))}
    </span>
  );

/** A change behind a confirmation that needs no script (a `<details>`), as a key's deletion is. */
const Confirmed = (props: {
  csrf: string;
  action: string;
  summary: string;
  question: string;
  button: string;
  danger: boolean;
}) => (
  <details class="confirm">
    <summary>{props.summary}</summary>
    <p>{props.question}</p>
    <form method="post" action={props.action}>
      <CsrfField token={props.csrf} />
      <button type="submit" class={props.danger ? 'danger' : undefined}>
        {props.button}
      </button>
    </form>
  </details>
);

/** Rotate its secret and remove it, each behind a confirmation. */
export const EndpointActions = ({ csrf, row }: { csrf: string; row: WebhookEndpointRow }) => (
  <div class="row-actions">
    <Confirmed
      csrf={csrf}
      action={webhookPath(row.id, 'rotate')}
      summary="Rotate secret…"
      question={`Make a new signing secret for ${row.url}? The current one still signs for 24 hours, then stops.`}
      button="Rotate the secret"
      danger={false}
    />
    <Confirmed
      csrf={csrf}
      action={webhookPath(row.id, 'remove')}
      summary="Remove…"
      question={`Remove ${row.url}? It receives nothing from now on, and deliveries still waiting for it are given up. This cannot be undone.`}
      button="Remove this endpoint"
      danger
    />
  </div>
);

/** Whether it fails, since when, what waits for it and when the next attempt is (issue 42): the list said `enabled`
 * and nothing else while an endpoint was down. */
export const EndpointHealth = ({ row }: { row: WebhookEndpointRow }) => (
  <span class="lines">
    {row.failingSince !== undefined && (
      <span class="badge endpoint-failing">
        failing since <Time at={row.failingSince} />
      </span>
    )}
    {row.backlog !== undefined && (
      <span class="backlog">
        {row.backlog.waiting}
        {row.backlog.truncated ? '+' : ''} waiting
      </span>
    )}
    {row.backlog?.nextAttemptAt !== undefined && (
      <span class="next-attempt">
        next attempt <Time at={row.backlog.nextAttemptAt} />
      </span>
    )}
  </span>
);

/** The account's endpoints: URL (to its delivery log), events, status, created, last delivered, and its actions. */
export const WebhookTable = ({ csrf, endpoints }: { csrf: string; endpoints: readonly WebhookEndpointRow[] }) => (
  <DataTable
    caption="Your webhook endpoints"
    stacked
    rows={endpoints}
    rowId={(row) => `endpoint-${row.id}`}
    columns={[
      { header: 'URL', cellClass: 'url-cell', cell: (row) => <a href={webhookPath(row.id)}>{row.url}</a> },
      { header: 'Events', cell: (row) => <EventList events={row.events} /> },
      { header: 'Status', cell: (row) => <span class={`badge endpoint-${row.status}`}>{row.status}</span> },
      { header: 'Health', cell: (row) => <EndpointHealth row={row} /> },
      { header: 'Created', cell: (row) => <Time at={row.createdAt} /> },
      {
        header: 'Last delivered',
        cell: (row) => <TimeOrNever at={row.lastDeliveredAt} />,
      },
      { header: 'Actions', actions: true, cell: (row) => <EndpointActions csrf={csrf} row={row} /> },
    ]}
  />
);
