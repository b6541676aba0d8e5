import { CsrfField } from './CsrfField.js';
import { Time } from './Time.js';
import type { KeyRow } from './viewModels.js';

/** One key's delete button, behind a confirmation that needs no script (a `<details>`). */
const DeleteKey = ({ csrf, row }: { csrf: string; row: KeyRow }) => (
  <details class="confirm">
    <summary>Delete…</summary>
    <p>
      Delete <code>{row.prefix}…</code>
      {row.name !== undefined && ` (${row.name})`}? The very next API call with it is refused. This cannot be undone.
    </p>
    <form method="post" action={`/dashboard/keys/${encodeURIComponent(row.id)}/delete`}>
      <CsrfField token={csrf} />
      <button type="submit" class="danger">
        Delete this key
      </button>
    </form>
  </details>
);

/** The account's active keys: name, prefix, created, last used, and a delete for each. */
export const KeyTable = ({ csrf, keys }: { csrf: string; keys: readonly KeyRow[] }) => (
  <div class="table-wrap">
    <table class="stack">
      <caption class="visually-hidden">Your API keys</caption>
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Key</th>
          <th scope="col">Created</th>
          <th scope="col">Last used</th>
          <th scope="col">
            <span class="visually-hidden">Actions</span>
          </th>
        </tr>
      </thead>
      <tbody>
        {keys.map((row) => (
          <tr id={`key-${row.id}`}>
            <td data-label="Name">
              <span>{row.name ?? <span class="muted">(no name)</span>}</span>
            </td>
            <td data-label="Key">
              <code>{row.prefix}…</code>
            </td>
            <td data-label="Created">
              <Time at={row.createdAt} />
            </td>
            <td data-label="Last used">
              {row.lastUsedAt === undefined ? <span class="muted">never</span> : <Time at={row.lastUsedAt} />}
            </td>
            <td>
              <DeleteKey csrf={csrf} row={row} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  </div>
);
