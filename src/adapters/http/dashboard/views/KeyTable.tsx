import { CsrfField } from './CsrfField.js';
import { DataTable } from './DataTable.js';
import { Time, TimeOrNever } from './Time.js';
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
  <DataTable
    caption="Your API keys"
    stacked
    rows={keys}
    rowId={(row) => `key-${row.id}`}
    columns={[
      { header: 'Name', cell: (row) => <span>{row.name ?? <span class="muted">(no name)</span>}</span> },
      { header: 'Key', cell: (row) => <code>{row.prefix}…</code> },
      { header: 'Created', cell: (row) => <Time at={row.createdAt} /> },
      {
        header: 'Last used',
        cell: (row) => <TimeOrNever at={row.lastUsedAt} />,
      },
      {
        header: 'Expires',
        cell: (row) => <TimeOrNever at={row.expiresAt} />,
      },
      { header: 'Actions', actions: true, cell: (row) => <DeleteKey csrf={csrf} row={row} /> },
    ]}
  />
);
