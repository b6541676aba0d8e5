import { Time } from './Time.js';
import type { RequestRow } from './viewModels.js';

/** Requests newest first: id, model, status in words, created and completed times. */
export const RequestTable = ({ requests }: { requests: readonly RequestRow[] }) => {
  const rows = [...requests].sort((a, b) => b.createdAt - a.createdAt);
  return (
    <div class="table-wrap">
      <table class="stack">
        <caption class="visually-hidden">Your recent requests, newest first</caption>
        <thead>
          <tr>
            <th scope="col">Request</th>
            <th scope="col">Model</th>
            <th scope="col">Status</th>
            <th scope="col">Created</th>
            <th scope="col" class="hide-narrow">
              Completed
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr>
              <td data-label="Request">
                <a href={`/dashboard/requests/${encodeURIComponent(r.id)}`}>
                  <code>{r.id}</code>
                </a>
              </td>
              <td data-label="Model">
                <span>{r.model}</span>
              </td>
              <td data-label="Status">
                <span class={`badge status-${r.status}`}>{r.status}</span>
              </td>
              <td data-label="Created">
                <Time at={r.createdAt} />
              </td>
              <td class="hide-narrow" data-label="Completed">
                {r.completedAt === undefined ? <span class="muted">—</span> : <Time at={r.completedAt} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};
