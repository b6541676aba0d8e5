/** What every part of a PostgreSQL verify shares: the snapshot's statements, a page at a time, and the differences. */
import type { StoredEvent } from '../../domain/events.js';
import { maxDifferences } from '../../storage/verifyReport.js';
import type { Query } from './db.js';
import { show } from './verifyValues.js';

export type VerifyCheck = {
  readonly query: Query;
  readonly pageSize: number;
  /** What was found to differ, the first `maxDifferences` of it. */
  readonly differences: string[];
  readonly differ: (message: string) => void;
  /** Rows of an open cursor, a page at a time (plain statements, so others may run in between). */
  readonly pagesOf: <T>(cursor: string, select: string) => AsyncGenerator<T[]>;
  /** An event's payload, with a difference when it does not carry its row's seq. */
  readonly payloadOf: (row: { seq: number | string; payload: StoredEvent }) => StoredEvent;
};

export const createVerifyCheck = (query: Query, pageSize: number): VerifyCheck => {
  const differences: string[] = [];
  const differ = (message: string) => {
    if (differences.length < maxDifferences) differences.push(message);
  };
  /** Rows of an open cursor, a page at a time (plain statements, so others may run in between). */
  const pagesOf = async function* <T>(cursor: string, select: string): AsyncGenerator<T[]> {
    await query({ text: `DECLARE ${cursor} NO SCROLL CURSOR FOR ${select}`, values: [] });
    for (;;) {
      const rows = await query<T[]>({ text: `FETCH FORWARD ${pageSize} FROM ${cursor}`, values: [] });
      if (rows.length > 0) yield rows;
      if (rows.length < pageSize) break;
    }
    await query({ text: `CLOSE ${cursor}`, values: [] });
  };
  const payloadOf = (row: { seq: number | string; payload: StoredEvent }): StoredEvent => {
    if (row.payload?.seq !== Number(row.seq))
      differ(`event ${row.seq}: its payload says seq ${show(row.payload?.seq)}`);
    return row.payload;
  };
  return { query, pageSize, differences, differ, pagesOf, payloadOf };
};
