import { BatchTable } from './BatchTable.js';
import { Layout } from './Layout.js';
import { Pager } from './Pager.js';
import { renderDocument } from './render.js';
import { type BatchesView, batchRefreshSeconds } from './viewModels.js';

const newest = '/dashboard/batches';

/** `GET /dashboard/batches[?before=…|?after=…]`: one page of the account's batches, newest first; it reloads itself
 * while one of them runs. */
export const batchesPage = ({ csrf, email, batches, olderCursor, newerCursor }: BatchesView): string =>
  renderDocument(
    <Layout
      title="Batches"
      session={{ csrf, email }}
      current="batches"
      refreshSeconds={batches.some((batch) => !batch.ended) ? batchRefreshSeconds : undefined}
    >
      <h1>Batches</h1>
      <section class="card" aria-labelledby="list-h">
        <h2 id="list-h">Your batches {newerCursor !== undefined && <span class="muted">(older ones)</span>}</h2>
        {batches.length === 0 ? (
          <div class="empty">
            {newerCursor !== undefined ? (
              <p>
                No batches on this page. <a href={newest}>Back to the newest</a>
              </p>
            ) : (
              <p>
                No batches yet. Upload a JSONL file with <code>POST /v1/files</code>, then create a batch with{' '}
                <code>POST /v1/batches</code> and a key from the <a href="/dashboard/keys">Keys</a> page.
              </p>
            )}
          </div>
        ) : (
          <BatchTable batches={batches} csrf={csrf} />
        )}
        <Pager
          newer={newerCursor === undefined ? undefined : `${newest}?after=${newerCursor}`}
          older={olderCursor === undefined ? undefined : `${newest}?before=${olderCursor}`}
        />
        <p class="hint">
          Once a batch has ended, its output file holds the answers of its completed lines and its error file the lines
          that failed or were not run; either is absent when it would hold no line.
        </p>
      </section>
    </Layout>,
  );
