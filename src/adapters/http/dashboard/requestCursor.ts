import type { RequestCursor } from '../../../ports/Store.js';

/**
 * A page of the dashboard's request list is named by a cursor, the creation time and id of the row it starts after
 * (`?before=1732390000000.req_…` for older rows, `?after=…` for newer ones), so that any page costs one page's reads
 * however far back it is. Paging by page number read every row before the page asked for.
 */
const pattern = /^(\d{1,15})\.([A-Za-z0-9_-]{1,128})$/;

export const cursorText = ({ createdAt, reqId }: RequestCursor): string => `${createdAt}.${reqId}`;

/** The cursor a link names, or undefined for anything that is not one. */
export const parseCursor = (text: string): RequestCursor | undefined => {
  const match = pattern.exec(text);
  return match === null ? undefined : { createdAt: Number(match[1]), reqId: match[2] as string };
};

/** The cursor of a row: its creation time and id. */
export const cursorOf = (row: { readonly context: RequestCursor }): string => cursorText(row.context);
