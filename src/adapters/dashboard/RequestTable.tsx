import { Time } from './Time.js';
import type { RequestRow } from './viewModels.js';

/** Requests newest first: id, model, status in words, created and completed times. */
export const RequestTable = ({ requests }: { requests: readonly RequestRow[] }) => {
  const rows = [...requests].sort((a, b) => b.createdAt - a.createdAt);
  return (
    <div class="table-wrap">
      <table>
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
              <td>
                <code>{r.id}</code>
              </td>
              <td>{r.model}</td>
              <td>
                <span class={`badge status-${r.status}`}>{r.status}</span>
              </td>
              <td>
                <Time at={r.createdAt} />
              </td>
              <td class="hide-narrow">
                {r.completedAt === undefined ? <span class="muted">—</span> : <Time at={r.completedAt} />}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};
