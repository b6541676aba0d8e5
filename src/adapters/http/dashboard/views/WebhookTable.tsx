import { CsrfField } from './CsrfField.js';
import { Time } from './Time.js';
import type { WebhookEndpointRow } from './viewModels.js';

/** Where the dashboard shows an endpoint and its delivery log, and where its forms post. */
export const webhookPath = (endpointId: string, action?: 'remove' | 'rotate' | 'enable') =>
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

/** The account's endpoints: URL (to its delivery log), events, status, created, last delivered, and its actions. */
export const WebhookTable = ({ csrf, endpoints }: { csrf: string; endpoints: readonly WebhookEndpointRow[] }) => (
  <div class="table-wrap">
    <table class="stack">
      <caption class="visually-hidden">Your webhook endpoints</caption>
      <thead>
        <tr>
          <th scope="col">URL</th>
          <th scope="col">Events</th>
          <th scope="col">Status</th>
          <th scope="col">Created</th>
          <th scope="col">Last delivered</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {endpoints.map((row) => (
          <tr id={`endpoint-${row.id}`}>
            <td data-label="URL" class="url-cell">
              <a href={webhookPath(row.id)}>{row.url}</a>
            </td>
            <td data-label="Events">
              <EventList events={row.events} />
            </td>
            <td data-label="Status">
              <span class={`badge endpoint-${row.status}`}>{row.status}</span>
            </td>
            <td data-label="Created">
              <Time at={row.createdAt} />
            </td>
            <td data-label="Last delivered">
              {row.lastDeliveredAt === undefined ? <span class="muted">never</span> : <Time at={row.lastDeliveredAt} />}
            </td>
            <td>
              <EndpointActions csrf={csrf} row={row} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);
