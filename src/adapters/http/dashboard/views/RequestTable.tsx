import { DataTable } from './DataTable.js';
import { Time } from './Time.js';
import type { RequestRow } from './viewModels.js';

/** Requests newest first: id, its batch (a line's), model, status in words, created and completed times. */
export const RequestTable = ({ requests }: { requests: readonly RequestRow[] }) => (
  <DataTable
    caption="Your recent requests, newest first"
    stacked
    rows={[...requests].sort((a, b) => b.createdAt - a.createdAt)}
    columns={[
      {
        header: 'Request',
        cell: (r) => (
          <a href={`/dashboard/requests/${encodeURIComponent(r.id)}`}>
            <code>{r.id}</code>
          </a>
        ),
      },
      {
        header: 'Batch',
        class: 'hide-narrow',
        cell: (r) =>
          r.batchId === undefined ? (
            <span class="muted">—</span>
          ) : (
            <a href={`/dashboard/batches/${encodeURIComponent(r.batchId)}`}>
              <code>{r.batchId}</code>
            </a>
          ),
      },
      { header: 'Model', cell: (r) => <span>{r.model}</span> },
      { header: 'Status', cell: (r) => <span class={`badge status-${r.status}`}>{r.status}</span> },
      { header: 'Created', cell: (r) => <Time at={r.createdAt} /> },
      {
        header: 'Completed',
        class: 'hide-narrow',
        cell: (r) => (r.completedAt === undefined ? <span class="muted">—</span> : <Time at={r.completedAt} />),
      },
    ]}
  />
);
