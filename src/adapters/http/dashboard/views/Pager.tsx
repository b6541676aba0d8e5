/** The links to a list's newer and older pages (a side without one keeps its place); nothing when there is neither. */
export const Pager = ({
  newer,
  older,
  newerLabel = '← Newer',
}: {
  newer: string | undefined;
  older: string | undefined;
  newerLabel?: string;
}) =>
  newer === undefined && older === undefined ? null : (
    <nav class="pager" aria-label="Pages">
      {newer !== undefined ? <a href={newer}>{newerLabel}</a> : <span />}
      {older !== undefined ? <a href={older}>Older →</a> : <span />}
    </nav>
  );
