/** The copy of `airs migrate` checked against its source: every request row, and every batch, file and webhook row. */
import type { RequestState } from '../../domain/request/state.js';
import type { KeptKind, LogSource } from '../../storage/logSource.js';
import type { Query } from './db.js';
import { SourceDamaged } from './importErrors.js';
import { sameAsJson } from './verifyValues.js';

/** Rows in chunks of `size`, from an iterable read lazily. */
export async function* chunksOf<T>(rows: Iterable<T>, size: number): AsyncGenerator<T[]> {
  let chunk: T[] = [];
  for (const row of rows) {
    chunk.push(row);
    if (chunk.length >= size) {
      yield chunk;
      chunk = [];
    }
  }
  if (chunk.length > 0) yield chunk;
}

/**
 * Every request row of the copy against the source's record of it, both in id order (the columns' `COLLATE "C"` and
 * LMDB's byte keys order them alike), a page at a time: the same view (as encoded bytes) and the same text. A record the
 * log does not make, or one that differs, is damage of the source (its views do not follow its log).
 */
export const compareWithSource = async (
  query: Query,
  source: LogSource,
  pageSize: number,
  onRow: () => void,
): Promise<void> => {
  const records = source.requestRecords()[Symbol.iterator]();
  let next = records.next();
  await query({
    text: 'DECLARE airs_migrate_requests NO SCROLL CURSOR FOR SELECT req_id, state, text FROM requests ORDER BY req_id',
    values: [],
  });
  for (;;) {
    const rows = await query<{ req_id: string; state: RequestState; text: Buffer | null }[]>({
      text: `FETCH FORWARD ${pageSize} FROM airs_migrate_requests`,
      values: [],
    });
    for (const row of rows) {
      onRow();
      if (next.done) throw new SourceDamaged(`request ${row.req_id}: in the log but its record is missing`);
      const record = next.value;
      const id = record.reqId;
      if (id !== row.req_id)
        throw new SourceDamaged(
          id < row.req_id
            ? `request ${id}: its record is stored but the log never made it`
            : `request ${row.req_id}: in the log but its record is missing`,
        );
      if (!record.holds(row.state))
        throw new SourceDamaged(`request ${id}: its record differs from the state its events give`);
      const text = record.text();
      if (!text.equals(row.text ?? Buffer.alloc(0)))
        throw new SourceDamaged(`request ${id}: its text was not copied as stored`);
      next = records.next();
    }
    if (rows.length < pageSize) break;
  }
  await query({ text: 'CLOSE airs_migrate_requests', values: [] });
  if (!next.done) {
    throw new SourceDamaged(`request ${next.value.reqId}: its record is stored but the log never made it`);
  }
};

/**
 * Every batch's, file's, webhook endpoint's or delivery's row of the copy against the source's (a page of the source's at a time): the same view, and
 * as many rows as the source holds. A source view the log does not make, or one that differs, is damage of the source.
 */
export const compareKeptWithSource = async (
  query: Query,
  source: LogSource,
  kind: KeptKind,
  pageSize: number,
): Promise<void> => {
  const kept = {
    batch: ['batches', 'batch_id'],
    file: ['files', 'file_id'],
    'webhook endpoint': ['webhook_endpoints', 'endpoint_id'],
    'webhook delivery': ['webhook_deliveries', 'delivery_id'],
  } as const;
  const [table, id] = kept[kind];
  let held = 0;
  for await (const rows of chunksOf(source.kept(kind), pageSize)) {
    const ids = rows.map((row) => row.id);
    const stored = await query<{ id: string; state: unknown }[]>({
      text: `SELECT ${id} AS id, state FROM ${table} WHERE ${id} = ANY($1::text[])`,
      values: [ids],
    });
    const copies = new Map(stored.map((row) => [row.id, row.state]));
    for (const row of rows) {
      const copy = copies.get(row.id);
      if (copy === undefined)
        throw new SourceDamaged(`${kind} ${row.id}: its record is stored but the log never made it`);
      if (!sameAsJson(copy, row.state()))
        throw new SourceDamaged(`${kind} ${row.id}: its record differs from the view its events give`);
    }
    held += rows.length;
  }
  const [copied] = await query<{ n: number }[]>({ text: `SELECT count(*)::float8 AS n FROM ${table}`, values: [] });
  if ((copied?.n ?? 0) !== held)
    throw new SourceDamaged(`${table}: the log makes ${copied?.n ?? 0}, the data directory holds ${held}`);
};
