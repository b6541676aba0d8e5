import { CancelBatch } from './CancelBatch.js';
import { DataTable } from './DataTable.js';
import { grouped } from './format.js';
import { Time } from './Time.js';
import type { BatchRow } from './viewModels.js';

/** Where the dashboard serves a file's bytes to its own account (a download, by the session cookie). */
export const fileDownloadPath = (fileId: string) => `/dashboard/files/${encodeURIComponent(fileId)}`;

/** The batch's output and error files, each a download once written; a dash while it has none. */
export const Files = ({ batch }: { batch: BatchRow }) => {
  const links = [
    { fileId: batch.outputFileId, label: 'Output' },
    { fileId: batch.errorFileId, label: 'Errors' },
  ].filter((link) => link.fileId !== undefined);
  if (links.length === 0) return <span class="muted">—</span>;
  return (
    <>
      {links.map(({ fileId, label }) => (
        <a href={fileDownloadPath(fileId as string)} download>
          {label}
        </a>
      ))}
    </>
  );
};

/** Lines ended of its lines, as a bar and in words; a batch still validating has no lines counted yet. */
export const Progress = ({ batch }: { batch: BatchRow }) => {
  const done = batch.completed + batch.failed;
  const percent = batch.total === 0 ? 0 : Math.floor((done * 100) / batch.total);
  return (
    <div class="progress">
      <progress max={Math.max(batch.total, 1)} value={done} aria-label={`${batch.id}: ${percent}% of lines done`}>
        {percent}%
      </progress>
      <span>
        {grouped(done)} of {grouped(batch.total)} ({percent}%)
      </span>
    </div>
  );
};

/** Where a batch's own page is. */
export const batchPath = (batchId: string) => `/dashboard/batches/${encodeURIComponent(batchId)}`;

/** A metadata value shown in a table cell is cut to this many characters (the batch's page shows it whole). */
const metadataCellChars = 40;

/** The caller's metadata as `key: value` lines; a dash when it has none. */
export const Metadata = ({ metadata, cut }: { metadata: Readonly<Record<string, string>>; cut?: number }) => {
  const entries = Object.entries(metadata);
  if (entries.length === 0) return <span class="muted">—</span>;
  return (
    <dl class="metadata">
      {entries.map(([key, value]) => (
        <div>
          <dt>{key}</dt>
          <dd title={cut !== undefined && value.length > cut ? value : undefined}>
            {cut !== undefined && value.length > cut ? `${value.slice(0, cut)}…` : value}
          </dd>
        </div>
      ))}
    </dl>
  );
};

/** Tokens read and written, as the API's `usage` counts them. */
export const Tokens = ({ batch }: { batch: BatchRow }) => (
  <span class="tokens">
    {grouped(batch.inputTokens)} in / {grouped(batch.outputTokens)} out
  </span>
);

/**
 * Batches newest first: id (a link to its page), status, endpoint, model, created and ended, progress, counts, tokens,
 * metadata, their files to download, and Cancel for those a cancel would stop.
 */
export const BatchTable = ({ batches, csrf }: { batches: readonly BatchRow[]; csrf: string }) => (
  <DataTable
    caption="Your batches, newest first"
    stacked={false}
    rows={[...batches].sort((a, b) => b.createdAt - a.createdAt)}
    rowId={(b) => b.id}
    columns={[
      {
        header: 'Batch',
        cell: (b) => (
          <a href={batchPath(b.id)}>
            <code>{b.id}</code>
          </a>
        ),
      },
      { header: 'Status', cell: (b) => <span class={`badge status-${b.status}`}>{b.status.replace('_', ' ')}</span> },
      { header: 'Endpoint', class: 'hide-narrow', cell: (b) => <code>{b.endpoint}</code> },
      { header: 'Model', cell: (b) => b.model ?? <span class="muted">—</span> },
      { header: 'Created', class: 'hide-narrow', cell: (b) => <Time at={b.createdAt} /> },
      {
        header: 'Ended',
        class: 'hide-narrow',
        cell: (b) => (b.endedAt === undefined ? <span class="muted">—</span> : <Time at={b.endedAt} />),
      },
      { header: 'Progress', cell: (b) => <Progress batch={b} /> },
      { header: 'Completed', class: 'num', cell: (b) => grouped(b.completed) },
      { header: 'Failed', class: 'num', cell: (b) => grouped(b.failed) },
      { header: 'Tokens', class: 'hide-narrow', cell: (b) => <Tokens batch={b} /> },
      {
        header: 'Metadata',
        class: 'hide-narrow',
        cell: (b) => <Metadata metadata={b.metadata} cut={metadataCellChars} />,
      },
      { header: 'Files', cellClass: 'files', cell: (b) => <Files batch={b} /> },
      {
        header: 'Actions',
        actions: true,
        cellClass: 'row-actions',
        cell: (b) => (b.cancellable ? <CancelBatch batchId={b.id} csrf={csrf} /> : null),
      },
    ]}
  />
);
