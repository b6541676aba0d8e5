import { Files, Metadata, Progress, Tokens } from './BatchTable.js';
import { CancelBatch } from './CancelBatch.js';
import { grouped } from './format.js';
import { Layout } from './Layout.js';
import { Notice } from './Notice.js';
import { renderDocument } from './render.js';
import { Time } from './Time.js';
import { type BatchPageView, batchRefreshSeconds } from './viewModels.js';

/** A step's time, or a dash for a step not reached. */
const Moment = ({ at }: { at: number | undefined }) =>
  at === undefined ? <span class="muted">—</span> : <Time at={at} />;

/**
 * `GET /dashboard/batches/{id}`: one of the account's batches: its status and progress, request counts, token usage,
 * metadata, the times of its steps, its files, and Cancel while a cancel would stop it. It reloads itself until the
 * batch has ended.
 */
export const batchPage = ({ csrf, email, batch, cancelAsked }: BatchPageView): string =>
  renderDocument(
    <Layout
      title={`Batch ${batch.id}`}
      session={{ csrf, email }}
      current="batches"
      refreshSeconds={batch.ended ? undefined : batchRefreshSeconds}
    >
      <p>
        <a href="/dashboard/batches">← Batches</a>
      </p>
      <h1 class="request-title">
        Batch <code>{batch.id}</code>
      </h1>
      {cancelAsked === true && (
        <Notice kind="info">
          <p>Cancel asked: no more of its lines start. It ends cancelled once the lines running have finished.</p>
        </Notice>
      )}
      <div class="grid">
        <section class="card" aria-labelledby="summary-h">
          <h2 id="summary-h">Summary</h2>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <span class={`badge status-${batch.status}`} id="batch-status">
                {batch.status.replace('_', ' ')}
              </span>
            </dd>
            <dt>Endpoint</dt>
            <dd>
              <code>{batch.endpoint}</code>
            </dd>
            <dt>Model</dt>
            <dd>{batch.model ?? <span class="muted">—</span>}</dd>
            <dt>Input file</dt>
            <dd>
              <code>{batch.inputFileId}</code>
            </dd>
            <dt>Files</dt>
            <dd class="files">
              <Files batch={batch} />
            </dd>
          </dl>
          {batch.cancellable && <CancelBatch batchId={batch.id} csrf={csrf} />}
        </section>
        <section class="card" aria-labelledby="usage-h">
          <h2 id="usage-h">Usage</h2>
          <Progress batch={batch} />
          <dl class="facts" id="usage">
            <dt>Requests</dt>
            <dd id="request-counts">
              {grouped(batch.completed)} completed, {grouped(batch.failed)} failed, {grouped(batch.total)} in all
            </dd>
            <dt>Input tokens</dt>
            <dd id="input-tokens">{grouped(batch.inputTokens)}</dd>
            <dt>Output tokens</dt>
            <dd id="output-tokens">{grouped(batch.outputTokens)}</dd>
            <dt>Tokens</dt>
            <dd>
              <Tokens batch={batch} />
            </dd>
          </dl>
          <p>
            <a href="/dashboard/requests?show=batch">See batch lines</a>
          </p>
        </section>
        <section class="card" aria-labelledby="times-h">
          <h2 id="times-h">Times (UTC)</h2>
          <dl class="facts" id="times">
            <dt>Created</dt>
            <dd>
              <Time at={batch.createdAt} />
            </dd>
            <dt>In progress</dt>
            <dd>
              <Moment at={batch.inProgressAt} />
            </dd>
            {batch.cancellingAt !== undefined && (
              <>
                <dt>Cancelling</dt>
                <dd>
                  <Time at={batch.cancellingAt} />
                </dd>
              </>
            )}
            <dt>Finalizing</dt>
            <dd>
              <Moment at={batch.finalizingAt} />
            </dd>
            <dt>Ended</dt>
            <dd id="ended-at">
              <Moment at={batch.endedAt} />
            </dd>
            <dt>Window ends</dt>
            <dd>
              <Moment at={batch.expiresAt} />
            </dd>
          </dl>
        </section>
      </div>
      <section class="card" aria-labelledby="metadata-h">
        <h2 id="metadata-h">Metadata</h2>
        <div id="metadata">
          <Metadata metadata={batch.metadata} />
        </div>
      </section>
      {batch.errors.length > 0 && (
        <section class="card" aria-labelledby="errors-h">
          <h2 id="errors-h">Errors</h2>
          <ul>
            {batch.errors.map((message) => (
              <li>{message}</li>
            ))}
          </ul>
        </section>
      )}
    </Layout>,
  );
