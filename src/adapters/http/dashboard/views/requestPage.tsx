import { queuePositionCap } from '../../../../domain/queuePosition.js';
import { grouped, plural } from './format.js';
import { Layout } from './Layout.js';
import { renderDocument } from './render.js';
import { Time } from './Time.js';
import type { RequestDetailView, RequestEventRow, ShownText } from './viewModels.js';

/** What each event of the log did, in words (`attempt` and `retryAt` where the event carries them). */
const eventInWords = (row: RequestEventRow) => {
  const attempt = row.attempt === undefined ? '' : ` ${row.attempt}`;
  switch (row.type) {
    case 'RequestQueued':
      return 'Submitted and queued';
    case 'RequestProcessingStarted':
      return `Attempt${attempt} started${row.upstream === undefined ? '' : ` on upstream ${row.upstream}`}${row.servedBy === undefined ? '' : ` of ${row.servedBy} (a fallback model)`}`;
    case 'RequestUpstreamChanged':
      return `Attempt${attempt} moved from upstream ${row.fromUpstream} to ${row.upstream} (its upstream failed)`;
    case 'RequestLeaseExtended':
      return `Attempt${attempt} still running`;
    case 'RequestReleased':
      return `Attempt${attempt} handed back (its server was stopping)`;
    case 'RequestOwnerGone':
      return `Attempt${attempt} ended: its server process was gone`;
    case 'RequestAttemptFailed':
      return `Attempt${attempt} failed; to be tried again`;
    case 'RequestCompleted':
      return row.firstTokenMs === undefined
        ? 'Answered'
        : `Answered (first token after ${grouped(row.firstTokenMs)} ms)`;
    case 'RequestFailed':
      return 'Failed for good';
    case 'RequestExpired':
      return 'Expired: its texts were deleted';
    case 'RequestCancelled':
      return 'Cancelled';
    default:
      return row.type;
  }
};

/** A text cut to its bound, and a note saying so. */
const Text = ({ id, shown }: { id: string; shown: ShownText }) => (
  <>
    <pre class="text-box" id={id}>
      {shown.text}
    </pre>
    {shown.line !== undefined && (
      <p class="hint" id={`${id}-line`}>
        Line {grouped(shown.line)} of the batch's input file <code>{shown.file}</code> (
        {plural(shown.totalBytes ?? 0, 'byte')}
        ), read from the file: a batch's lines are not copied into their requests.
      </p>
    )}
    {Number.isNaN(shown.totalChars) ? (
      <p class="hint">Showing the first {plural(shown.text.length, 'character')} of the line.</p>
    ) : (
      shown.text.length < shown.totalChars && (
        <p class="hint">
          Showing the first {grouped(shown.text.length)} of {plural(shown.totalChars, 'character')}.
        </p>
      )
    )}
  </>
);

const Moment = ({ at }: { at: number | undefined }) =>
  at === undefined ? <span class="muted">—</span> : <Time at={at} />;

/**
 * `GET /dashboard/requests/:id`: one of the account's own requests: its input while it is kept, its answer (or how
 * it ended), usage, times, and its events from the log. Every text is shown as text, cut to a bound by the route.
 */
export const requestPage = (view: RequestDetailView): string => {
  const { csrf, email, id, status } = view;
  const inputName =
    view.input === 'prompt' ? 'Prompt' : view.input === 'line' ? 'Batch line (JSON)' : 'Conversation (JSON)';
  return renderDocument(
    <Layout title={`Request ${id}`} session={{ csrf, email }} current="requests">
      <p>
        <a href={view.batchId === undefined ? '/dashboard/requests' : '/dashboard/requests?show=batch'}>← Requests</a>
      </p>
      <h1 class="request-title">
        Request <code>{id}</code>
      </h1>
      <div class="grid">
        <section class="card" aria-labelledby="summary-h">
          <h2 id="summary-h">Summary</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <span class={`badge status-${status}`} id="request-status">
                {status}
              </span>
            </dd>
            {view.queuePosition !== undefined && (
              <>
                <dt>Queue position</dt>
                <dd id="queue-position">
                  {grouped(view.queuePosition)}
                  {view.queuePosition >= queuePositionCap ? ' or more' : view.queuePosition === 0 ? ' (next)' : ''}
                </dd>
              </>
            )}
            <dt>Model</dt>
            <dd>{view.model}</dd>
            {view.upstream !== undefined && (
              <>
                <dt>Upstream</dt>
                <dd id="served-by">
                  <code>{view.upstream}</code>
                  {view.servedBy !== undefined && (
                    <>
                      {' '}
                      of <code>{view.servedBy}</code> (a fallback model)
                    </>
                  )}
                </dd>
              </>
            )}
            {view.firstTokenMs !== undefined && (
              <>
                <dt>Time to first token</dt>
                <dd id="first-token">{grouped(view.firstTokenMs)} ms</dd>
              </>
            )}
            <dt>Attempts</dt>
            <dd>
              {grouped(view.attempts)}
              {view.maxAttempts !== undefined && ` of ${grouped(view.maxAttempts)}`}
            </dd>
            {view.batchId !== undefined && (
              <>
                <dt>Batch</dt>
                <dd>
                  <a href={`/dashboard/batches/${encodeURIComponent(view.batchId)}`}>
                    <code>{view.batchId}</code>
                  </a>
                  {view.customId !== undefined && (
                    <>
                      {' '}
                      line <code>{view.customId}</code>
                    </>
                  )}
                </dd>
              </>
            )}
          </dl>
        </section>
        <section class="card" aria-labelledby="usage-h">
          <h2 id="usage-h">Usage</h2>
          <dl class="facts" id="usage">
            <dt>Input tokens</dt>
            <dd>{view.inputTokens === undefined ? <span class="muted">—</span> : grouped(view.inputTokens)}</dd>
            <dt>Output tokens</dt>
            <dd>{view.outputTokens === undefined ? <span class="muted">—</span> : grouped(view.outputTokens)}</dd>
            <dt>Input size</dt>
            <dd>{plural(view.promptChars, 'character')}</dd>
            {view.responseChars !== undefined && (
              <>
                <dt>Answer size</dt>
                <dd>{plural(view.responseChars, 'character')}</dd>
              </>
            )}
            {view.finishReason !== undefined && (
              <>
                <dt>Finish reason</dt>
                <dd>
                  <code>{view.finishReason}</code>
                </dd>
              </>
            )}
          </dl>
        </section>
        <section class="card" aria-labelledby="times-h">
          <h2 id="times-h">Times (UTC)</h2>
          <dl class="facts" id="times">
            <dt>Created</dt>
            <dd>
              <Time at={view.createdAt} />
            </dd>
            <dt>Started</dt>
            <dd>
              <Moment at={view.startedAt} />
            </dd>
            {view.failedAt !== undefined ? (
              <>
                <dt>Failed</dt>
                <dd>
                  <Time at={view.failedAt} />
                </dd>
              </>
            ) : view.cancelledAt !== undefined ? (
              <>
                <dt>Cancelled</dt>
                <dd>
                  <Time at={view.cancelledAt} />
                </dd>
              </>
            ) : (
              <>
                <dt>Completed</dt>
                <dd>
                  <Moment at={view.completedAt} />
                </dd>
              </>
            )}
            <dt>{view.expiredAt === undefined ? 'Expires' : 'Expired'}</dt>
            <dd>
              <Time at={view.expiredAt ?? view.expiresAt} />
            </dd>
          </dl>
        </section>
      </div>
      <section class="card" aria-labelledby="input-h">
        <h2 id="input-h">{inputName}</h2>
        {view.prompt !== undefined ? (
          <Text id="prompt" shown={view.prompt} />
        ) : (
          <p class="muted" id="prompt-gone">
            Not kept: the input is deleted once the request is settled (it had {plural(view.promptChars, 'character')}).
          </p>
        )}
      </section>
      <section class="card" aria-labelledby="answer-h">
        <h2 id="answer-h">Answer</h2>
        {view.answer !== undefined ? (
          <Text id="answer" shown={view.answer} />
        ) : (
          <p id="no-answer" class={status === 'failed' ? 'error-text' : 'muted'}>
            {status === 'failed'
              ? view.failureSaid !== undefined
                ? `Processing failed after ${plural(view.attempts, 'attempt')}: ${view.failureSaid}.`
                : `Processing failed after ${plural(view.attempts, 'attempt')}; no answer was recorded. The reason is in the service's log for its operator.`
              : status === 'cancelled'
                ? 'Cancelled before it was answered.'
                : status === 'expired'
                  ? 'Expired: answers are kept for 24 hours after the request was created.'
                  : 'Not answered yet. Reload this page to see whether it is.'}
          </p>
        )}
      </section>
      <section class="card" aria-labelledby="events-h">
        <h2 id="events-h">History</h2>
        <p class="hint">The request's events in the service's log, oldest first (what airs replay shows).</p>
        <div class="table-wrap">
          <table id="events">
            <caption class="visually-hidden">The request's events, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">Time (UTC)</th>
                <th scope="col">What happened</th>
                <th scope="col">State after</th>
                <th scope="col" class="hide-narrow">
                  Event
                </th>
              </tr>
            </thead>
            <tbody>
              {view.events.map((row) => (
                <tr>
                  <td>
                    <Time at={row.at} />
                  </td>
                  <td>
                    {eventInWords(row)}
                    {row.retryAt !== undefined && (
                      <>
                        {' '}
                        at <Time at={row.retryAt} />
                      </>
                    )}
                  </td>
                  <td>{row.state}</td>
                  <td class="hide-narrow">
                    <code>{row.type}</code>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
        {view.eventsCutShort && (
          <p class="hint" id="events-cut">
            The history is cut short here: the service reads only so much of its log for one page. Its operator sees all
            of it with <code>airs replay --request {id}</code>.
          </p>
        )}
      </section>
    </Layout>,
  );
};
