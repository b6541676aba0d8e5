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
export const BatchTable = ({ batches }: { batches: readonly BatchRow[] }) => {
  const rows = [...batches].sort((a, b) => b.createdAt - a.createdAt);
  return (
    <div class="table-wrap">
      <table>
        <caption class="visually-hidden">Your batches, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Batch</th>
            <th scope="col">Status</th>
            <th scope="col" class="hide-narrow">
              Endpoint
            </th>
            <th scope="col">Model</th>
            <th scope="col" class="hide-narrow">
              Created
            </th>
            <th scope="col">Progress</th>
            <th scope="col" class="num">
              Completed
            </th>
            <th scope="col" class="num">
              Failed
            </th>
            <th scope="col">Files</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((b) => (
            <tr id={b.id}>
              <td>
                <code>{b.id}</code>
              </td>
              <td>
                <span class={`badge status-${b.status}`}>{b.status.replace('_', ' ')}</span>
              </td>
              <td class="hide-narrow">
                <code>{b.endpoint}</code>
              </td>
              <td>{b.model ?? <span class="muted">—</span>}</td>
              <td class="hide-narrow">
                <Time at={b.createdAt} />
              </td>
              <td>
                <Progress batch={b} />
              </td>
              <td class="num">{grouped(b.completed)}</td>
              <td class="num">{grouped(b.failed)}</td>
              <td class="files">
                <Files batch={b} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};
