import { HourlyChart } from './HourlyChart.js';
import { Layout } from './Layout.js';
import { RequestTable } from './RequestTable.js';
import { renderDocument } from './render.js';
import type { RequestsView } from './viewModels.js';

const newest = '/dashboard/requests';

/** `GET /dashboard/requests[?before=…|?after=…]`: the hourly chart, then one page of requests, newest first. */
export const requestsPage = ({ csrf, email, requests, olderCursor, newerCursor, hourly, now }: RequestsView): string =>
  renderDocument(
    <Layout title="Requests" session={{ csrf, email }} current="requests">
      <h1>Requests</h1>
      <section class="card" aria-labelledby="chart-h">
        <h2 id="chart-h">Requests per hour</h2>
        <HourlyChart hourly={hourly} now={now} />
      </section>
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">Recent requests {newerCursor !== undefined && <span class="muted">(older ones)</span>}</h2>
        {requests.length === 0 ? (
          <div class="empty">
            {newerCursor !== undefined ? (
              <p>
                No requests on this page. <a href={newest}>Back to the newest</a>
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
        {(newerCursor !== undefined || olderCursor !== undefined) && (
          <nav class="pager" aria-label="Pages">
            {newerCursor !== undefined ? <a href={`${newest}?after=${newerCursor}`}>← Newer</a> : <span />}
            {olderCursor !== undefined ? <a href={`${newest}?before=${olderCursor}`}>Older →</a> : <span />}
          </nav>
        )}
        <p class="hint">
          Requests are kept for 24 hours after they are created; expired ones leave no prompt or answer.
        </p>
      </section>
    </Layout>,
  );
