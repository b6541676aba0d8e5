import { CsrfField } from './CsrfField.js';
import { DeliveryTable } from './DeliveryTable.js';
import { DisabledEndpoint } from './DisabledEndpoint.js';
import { plural } from './format.js';
import { Layout } from './Layout.js';
import { Notice } from './Notice.js';
import { Pager } from './Pager.js';
import { renderDocument } from './render.js';
import { Time, TimeOrNever } from './Time.js';
import type { WebhookEndpointView } from './viewModels.js';
import { EndpointActions, EndpointHealth, EventList, webhookPath } from './WebhookTable.js';

/** How far back Recover may reach, as offered (the retention bounds what is left to recover anyway). */
export const recoverWindows = [
  { hours: 1, words: 'the last hour' },
  { hours: 6, words: 'the last 6 hours' },
  { hours: 24, words: 'the last 24 hours' },
  { hours: 72, words: 'the last 3 days' },
] as const;

/** Recover (issue 42, as Svix's): the deliveries that gave up, for events since a time, sent again. */
const RecoverForm = ({ csrf, endpointId }: { csrf: string; endpointId: string }) => (
  <form method="post" action={webhookPath(endpointId, 'recover')} class="recover">
    <CsrfField token={csrf} />
    <label>
      Send again the deliveries that gave up, for events in{' '}
      <select name="hours">
        {recoverWindows.map((window) => (
          <option value={String(window.hours)}>{window.words}</option>
        ))}
      </select>
    </label>
    <button type="submit" class="secondary">
      Recover failed deliveries
    </button>
  </form>
);

/** `GET /dashboard/webhooks/:id[?before=wh_…]`: one endpoint, its actions, and a page of its delivery log. */
export const webhookPage = (view: WebhookEndpointView): string => {
  const { csrf, email, endpoint, deliveries, olderCursor, older, error, redelivered, recovered } = view;
  const newest = webhookPath(endpoint.id);
  return renderDocument(
    <Layout title="Webhook endpoint" session={{ csrf, email }} current="webhooks">
      <p>
        <a href="/dashboard/webhooks">← Webhooks</a>
      </p>
      <h1 class="request-title">
        Webhook endpoint <code>{endpoint.id}</code>
      </h1>
      {error !== undefined && (
        <Notice kind="error">
          <p>{error}</p>
        </Notice>
      )}
      {redelivered !== undefined && (
        <Notice kind="info">
          <p role="status">
            Delivery <code>{redelivered}</code> is waiting to be sent again, with the same <code>webhook-id</code>.
          </p>
        </Notice>
      )}
      {recovered !== undefined && (
        <Notice kind="info">
          <p role="status">
            {plural(recovered.count, 'failed delivery', 'failed deliveries')} will be sent again, each with its own{' '}
            <code>webhook-id</code>.{recovered.more ? ' More are left: recover again to send the rest.' : ''}
          </p>
        </Notice>
      )}
      {endpoint.status === 'disabled' && <DisabledEndpoint csrf={csrf} row={endpoint} />}
      <section class="card" aria-labelledby="endpoint-h">
        <h2 id="endpoint-h">Endpoint</h2>
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            <code>{endpoint.url}</code>
          </dd>
          <dt>Events</dt>
          <dd>
            <EventList events={endpoint.events} />
          </dd>
          <dt>Status</dt>
          <dd>
            <span class={`badge endpoint-${endpoint.status}`}>{endpoint.status}</span>
          </dd>
          <dt>Created</dt>
          <dd>
            <Time at={endpoint.createdAt} />
          </dd>
          <dt>Health</dt>
          <dd>
            <EndpointHealth row={endpoint} />
          </dd>
          <dt>Last delivered</dt>
          <dd>
            <TimeOrNever at={endpoint.lastDeliveredAt} />
          </dd>
        </dl>
        <EndpointActions csrf={csrf} row={endpoint} />
        {endpoint.status === 'enabled' && <RecoverForm csrf={csrf} endpointId={endpoint.id} />}
      </section>
      <section class="card" aria-labelledby="log-h">
        <h2 id="log-h">Deliveries {older && <span class="muted">(older ones)</span>}</h2>
        {deliveries.length === 0 ? (
          <div class="empty">
            {older ? (
              <p>
                No deliveries on this page. <a href={newest}>Back to the newest</a>
              </p>
            ) : (
              <p>No deliveries yet. One is made when a request or batch ends with an event this endpoint receives.</p>
            )}
          </div>
        ) : (
          <DeliveryTable csrf={csrf} endpointId={endpoint.id} deliveries={deliveries} />
        )}
        <Pager
          newer={older ? newest : undefined}
          newerLabel="← Newest"
          older={olderCursor === undefined ? undefined : `${newest}?before=${encodeURIComponent(olderCursor)}`}
        />
        <p class="hint">
          Every attempt of a delivery, and every redelivery, carries the same <code>webhook-id</code>: receivers dedupe
          on it.
        </p>
      </section>
    </Layout>,
  );
};
