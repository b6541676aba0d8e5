import { CsrfField } from './CsrfField.js';
import { DisabledEndpoint } from './DisabledEndpoint.js';
import { grouped, plural } from './format.js';
import { Layout } from './Layout.js';
import { NewSecret } from './NewSecret.js';
import { Notice } from './Notice.js';
import { renderDocument } from './render.js';
import type { WebhooksView } from './viewModels.js';
import { WebhookTable } from './WebhookTable.js';

/** The longest URL the add form takes (the domain's bound, `maxWebhookUrlLength`). */
const urlMaxLength = 2_048;

/**
 * `GET /dashboard/webhooks`: the account's endpoints, a notice for each disabled one, the plan's bound and the add
 * form; and the answer to an add or a rotation (`newSecret`, shown this once) or to a refused add (`error`).
 */
export const webhooksPage = (view: WebhooksView): string => {
  const { csrf, email, endpoints, maxEndpoints, eventTypes, newSecret, error, form, done, retentionHours } = view;
  // At the bound the form is disabled with its reason beside it; the server still refuses a post (a stale tab).
  const atLimit = endpoints.length >= maxEndpoints;
  const checked = new Set(form?.events ?? []);
  return renderDocument(
    <Layout title="Webhooks" session={{ csrf, email }} current="webhooks">
      <h1>Webhooks</h1>
      {error !== undefined && (
        <Notice kind="error">
          <p>{error}</p>
        </Notice>
      )}
      {done !== undefined && (
        <Notice kind="info">
          <p role="status">
            <code>{done.url}</code>{' '}
            {done.what === 'removed'
              ? 'was removed. It receives nothing from now on.'
              : 'was enabled. New deliveries are sent to it again.'}
          </p>
        </Notice>
      )}
      {newSecret !== undefined && (
        <NewSecret secret={newSecret.secret} url={newSecret.url} rotated={newSecret.rotated} />
      )}
      {endpoints
        .filter((row) => row.status === 'disabled')
        .map((row) => (
          <DisabledEndpoint csrf={csrf} row={row} />
        ))}
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">
          Your endpoints{' '}
          <span class="muted">
            ({grouped(endpoints.length)} of {grouped(maxEndpoints)} endpoints)
          </span>
        </h2>
        {endpoints.length === 0 ? (
          <div class="empty">
            <p>You have no webhook endpoints yet.</p>
            <p>
              Add one below: airs then posts each request’s and batch’s ending to it, signed, instead of you polling.
            </p>
          </div>
        ) : (
          <WebhookTable csrf={csrf} endpoints={endpoints} />
        )}
      </section>
      <section class="card" aria-labelledby="add-h">
        <h2 id="add-h">Add an endpoint</h2>
        <form method="post" action="/dashboard/webhooks">
          <CsrfField token={csrf} />
          <div class="field">
            <label for="webhook-url">URL</label>
            <input
              id="webhook-url"
              name="url"
              type="url"
              required
              maxLength={urlMaxLength}
              placeholder="https://example.com/webhooks"
              autocomplete="off"
              value={form?.url}
              disabled={atLimit}
            />
          </div>
          <fieldset class="field event-types" disabled={atLimit} aria-describedby="events-hint">
            <legend>Events</legend>
            <p class="hint" id="events-hint">
              Check none to receive every event, also types added later.
            </p>
            <div class="checks">
              {eventTypes.map((type) => (
                <label class="check">
                  <input type="checkbox" name="events" value={type} checked={checked.has(type)} /> <code>{type}</code>
                </label>
              ))}
            </div>
          </fieldset>
          <div class="inline-form">
            <button type="submit" disabled={atLimit} aria-describedby={atLimit ? 'webhook-limit' : undefined}>
              Add endpoint
            </button>
            {atLimit && (
              <p class="limit-reason" id="webhook-limit">
                Your plan allows {grouped(maxEndpoints)} {maxEndpoints === 1 ? 'endpoint' : 'endpoints'}; remove one to
                add another, or ask your operator for a larger plan.
              </p>
            )}
          </div>
        </form>
        <p class="hint">
          Each delivery is a POST of an <code>event</code> object, signed per Standard Webhooks with the endpoint’s
          secret (shown once, when it is added). A delivery that is not answered 2xx within 10 seconds is retried for up
          to {plural(retentionHours, 'hour')}; an endpoint that fails for 3 days is disabled.
        </p>
      </section>
    </Layout>,
  );
};
