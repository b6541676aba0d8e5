import type { ComponentChildren } from 'preact';

/** One column of a dashboard table: its header, and what each row shows in it. */
export type Column<Row> = {
  /** The header's text; in a stacked table also each cell's `data-label`, its label on a narrow screen. */
  readonly header: string;
  /** A column of buttons: its header is for screen readers only, and its cells carry no label. */
  readonly actions?: boolean;
  /** A class on the header and the cells (`num`, `hide-narrow`). */
  readonly class?: string;
  /** A class on the cells only (`url-cell`). */
  readonly cellClass?: string;
  readonly cell: (row: Row) => ComponentChildren;
};

/**
 * The markup every list of the dashboard shares: a wrapper that scrolls, a caption for screen readers, a header row
 * and a row per item. A stacked table shows each row as a card on a narrow screen, each cell labelled by its header.
 */
export const DataTable = <Row,>(props: {
  readonly caption: string;
  readonly stacked: boolean;
  /** A class besides `stack` (`deliveries`). */
  readonly class?: string;
  readonly columns: readonly Column<Row>[];
  readonly rows: readonly Row[];
  /** The row's `id`, an anchor to link to. */
  readonly rowId?: (row: Row) => string;
}) => {
  const tableClass = [props.stacked ? 'stack' : undefined, props.class].filter((c) => c !== undefined).join(' ');
  return (
    <div class="table-wrap">
      <table class={tableClass === '' ? undefined : tableClass}>
        <caption class="visually-hidden">{props.caption}</caption>
        <thead>
          <tr>
            {props.columns.map((column) =>
              column.actions === true ? (
                <th scope="col">
                  <span class="visually-hidden">{column.header}</span>
                </th>
              ) : (
                <th scope="col" class={column.class}>
                  {column.header}
                </th>
              ),
            )}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr id={props.rowId?.(row)}>
              {props.columns.map((column) => {
                const label = props.stacked && column.actions !== true ? column.header : undefined;
                // The shared class before the label, a cell's own after it: the order the pages have always had.
                return column.class !== undefined ? (
                  <td class={column.class} data-label={label}>
                    {column.cell(row)}
                  </td>
                ) : (
                  <td data-label={label} class={column.cellClass}>
                    {column.cell(row)}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
};
