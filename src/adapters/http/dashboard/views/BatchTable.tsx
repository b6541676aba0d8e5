import { DataTable } from './DataTable.js';
import { grouped } from './format.js';
import { Time } from './Time.js';
import type { BatchRow } from './viewModels.js';

/** Where the dashboard serves a file's bytes to its own account (a download, by the session cookie). */
export const fileDownloadPath = (fileId: string) => `/dashboard/files/${encodeURIComponent(fileId)}`;

/** The batch's output and error files, each a download once written; a dash while it has none. */
const Files = ({ batch }: { batch: BatchRow }) => {
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
const Progress = ({ batch }: { batch: BatchRow }) => {
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

/** Batches newest first: id, status, endpoint, model, created, progress, counts, and their files to download. */
export const BatchTable = ({ batches }: { batches: readonly BatchRow[] }) => (
  <DataTable
    caption="Your batches, newest first"
    stacked={false}
    rows={[...batches].sort((a, b) => b.createdAt - a.createdAt)}
    rowId={(b) => b.id}
    columns={[
      { header: 'Batch', cell: (b) => <code>{b.id}</code> },
      { header: 'Status', cell: (b) => <span class={`badge status-${b.status}`}>{b.status.replace('_', ' ')}</span> },
      { header: 'Endpoint', class: 'hide-narrow', cell: (b) => <code>{b.endpoint}</code> },
      { header: 'Model', cell: (b) => b.model ?? <span class="muted">—</span> },
      { header: 'Created', class: 'hide-narrow', cell: (b) => <Time at={b.createdAt} /> },
      { header: 'Progress', cell: (b) => <Progress batch={b} /> },
      { header: 'Completed', class: 'num', cell: (b) => grouped(b.completed) },
      { header: 'Failed', class: 'num', cell: (b) => grouped(b.failed) },
      { header: 'Files', cellClass: 'files', cell: (b) => <Files batch={b} /> },
    ]}
  />
);
