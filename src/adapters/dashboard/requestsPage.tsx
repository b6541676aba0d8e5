import { HourlyChart } from './HourlyChart.js';
import { Layout } from './Layout.js';
import { RequestTable } from './RequestTable.js';
import { renderDocument } from './render.js';
import type { RequestsView } from './viewModels.js';

const pageHref = (page: number): string => (page <= 1 ? '/dashboard/requests' : `/dashboard/requests?page=${page}`);

/** `GET /dashboard/requests?page=N`: the hourly chart, then one page of requests, newest first. */
export const requestsPage = ({ csrf, email, requests, page, hasNext, hourly, now }: RequestsView): string =>
  renderDocument(
    <Layout title="Requests" session={{ csrf, email }} current="requests">
      <h1>Requests</h1>
      <section class="card" aria-labelledby="chart-h">
        <h2 id="chart-h">Requests per hour</h2>
        <HourlyChart hourly={hourly} now={now} />
      </section>
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">Recent requests {page > 1 && <span class="muted">(page {page})</span>}</h2>
        {requests.length === 0 ? (
          <div class="empty">
            {page > 1 ? (
              <p>
                No requests on this page. <a href={pageHref(1)}>Back to the newest</a>
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
        {(page > 1 || hasNext) && (
          <nav class="pager" aria-label="Pages">
            {page > 1 ? <a href={pageHref(page - 1)}>← Newer</a> : <span />}
            {hasNext ? <a href={pageHref(page + 1)}>Older →</a> : <span />}
          </nav>
        )}
        <p class="hint">
          Requests are kept for 24 hours after they are created; expired ones leave no prompt or answer.
        </p>
      </section>
    </Layout>,
  );
