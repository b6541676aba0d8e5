import { HourlyChart } from './HourlyChart.js';
import { Layout } from './Layout.js';
import { Pager } from './Pager.js';
import { RequestTable } from './RequestTable.js';
import { renderDocument } from './render.js';
import type { RequestsShown, RequestsView } from './viewModels.js';

/** The Requests page listing `show`, with a cursor's query (`before=…`, `after=…`) when given: the filter is in every
 * link, so paging and bookmarks keep it. */
const requestsHref = (show: RequestsShown, cursor?: string) => {
  const query = [show === 'interactive' ? undefined : `show=${show}`, cursor].filter((part) => part !== undefined);
  return query.length === 0 ? '/dashboard/requests' : `/dashboard/requests?${query.join('&')}`;
};

const shownLabels: Readonly<Record<RequestsShown, string>> = {
  interactive: 'Interactive',
  batch: 'Batch lines',
  all: 'All',
};

/** The filter: one link per choice, the current one marked (plain links, so it works without the script). */
const ShowFilter = ({ show }: { show: RequestsShown }) => (
  <nav class="filter" aria-label="Which requests">
    {(Object.keys(shownLabels) as RequestsShown[]).map((choice) => (
      <a href={requestsHref(choice)} aria-current={choice === show ? 'page' : undefined}>
        {shownLabels[choice]}
      </a>
    ))}
  </nav>
);

const listTitles: Readonly<Record<RequestsShown, string>> = {
  interactive: 'Recent interactive requests',
  batch: 'Recent batch lines',
  all: 'Recent requests',
};

/** `GET /dashboard/requests[?show=…][&before=…|&after=…]`: the hourly chart, then one page of requests of the kind
 * shown (interactive ones unless asked), newest first. */
export const requestsPage = ({
  csrf,
  email,
  requests,
  show,
  olderCursor,
  newerCursor,
  hourly,
  now,
}: RequestsView): string =>
  renderDocument(
    <Layout title="Requests" session={{ csrf, email }} current="requests">
      <h1>Requests</h1>
      <section class="card" aria-labelledby="chart-h">
        <h2 id="chart-h">Requests per hour</h2>
        <HourlyChart hourly={hourly} now={now} />
      </section>
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">
          {listTitles[show]} {newerCursor !== undefined && <span class="muted">(older ones)</span>}
        </h2>
        <ShowFilter show={show} />
        {requests.length === 0 ? (
          <div class="empty">
            {newerCursor !== undefined ? (
              <p>
                No requests on this page. <a href={requestsHref(show)}>Back to the newest</a>
              </p>
            ) : show === 'batch' ? (
              <p>
                No batch lines yet. Their batches are on the <a href="/dashboard/batches">Batches</a> page.
              </p>
            ) : (
              <p>
                No requests yet. Submit one with <code>POST /v1/ai</code> and a key from the{' '}
                <a href="/dashboard/keys">Keys</a> page.
              </p>
            )}
          </div>
        ) : (
          <RequestTable requests={requests} />
        )}
        <Pager
          newer={newerCursor === undefined ? undefined : requestsHref(show, `after=${newerCursor}`)}
          older={olderCursor === undefined ? undefined : requestsHref(show, `before=${olderCursor}`)}
        />
        <p class="hint">
          Requests are kept for 24 hours after they are created; expired ones leave no prompt or answer.
        </p>
      </section>
    </Layout>,
  );
