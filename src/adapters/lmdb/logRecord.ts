import { Packr } from 'msgpackr';
import type { StoredEvent } from '../../domain/events.js';
import { codeOf, compiledByVersion, type LayoutTable, tableOf, versionFor } from './logTables.js';

/**
 * A log record: the events of one batch, column by column, in MessagePack.
 *
 *   [layout version, sequence number of the first event, strings, event type codes, values]
 *
 * Each distinct string of the record (request ids, accounts, keys, models, reasons) is written once, in `strings`;
 * `values` holds, event after event and field after field, numbers and the indexes of strings. Reading a record
 * then makes one string per distinct value instead of one per field and no object per event unless asked for:
 * `airs replay --verify` reads a million events this way, and most of its time went into decoding them.
 */

/** A string field the event does not have. */
const absentText = -1;
const packr = new Packr({ useRecords: false });

type Record5 = [number, number, string[], number[], number[]];

export const encodeLogRecord = (events: readonly StoredEvent[]): Buffer => {
  const strings: string[] = [];
  const indexOf = new Map<string, number>();
  const codes: number[] = [];
  const values: number[] = [];
  const version = versionFor(events);
  const table = tableOf[version] as LayoutTable;
  for (const event of events) {
    const code = codeOf.get(event.type);
    if (code === undefined) throw new Error(`the log has no layout for events of type ${event.type}`);
    codes.push(code);
    const { fields, texts } = table[code] as LayoutTable[number];
    const source = event as unknown as Record<string, string | number>;
    for (let f = 0; f < fields.length; f++) {
      const value = source[fields[f] as string] as string | number;
      if (!texts[f]) {
        // A number the event lacks is written as nil (null), read back as absent.
        values.push(value === undefined ? (null as unknown as number) : (value as number));
        continue;
      }
      if (value === undefined) {
        values.push(absentText);
        continue;
      }
      let index = indexOf.get(value as string);
      if (index === undefined) {
        index = strings.length;
        strings.push(value as string);
        indexOf.set(value as string, index);
      }
      values.push(index);
    }
  }
  return packr.pack([version, events[0]?.seq ?? 0, strings, codes, values] satisfies Record5);
};

const unpackRecord = (bytes: Uint8Array): { record: Record5; table: LayoutTable } => {
  const record = packr.unpack(bytes) as Record5;
  const table = compiledByVersion[record[0]];
  if (table === undefined) throw new Error(`log record layout ${record[0]} is not known to this version of airs`);
  return { record, table };
};

/**
 * Calls `visit` with each event of the record in order. The object it gets is reused for the next event of the same
 * type: take what is needed from it, do not keep it.
 */
export const visitLogRecord = (bytes: Uint8Array, visit: (event: StoredEvent) => void): number => {
  const {
    record: [, firstSeq, strings, codes, values],
    table,
  } = unpackRecord(bytes);
  const reused: (Record<string, unknown> | undefined)[] = [];
  let v = 0;
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i] as number;
    const layout = table[code];
    if (layout === undefined) throw new Error(`log record: unknown event type code ${code}`);
    let event = reused[code];
    if (event === undefined) {
      // Made with its fields in the events' own order: type, the fields, then seq.
      event = { type: layout.type };
      reused[code] = event;
    }
    const { fields, texts } = layout;
    for (let f = 0; f < fields.length; f++) {
      const value = values[v++] as number;
      if (!texts[f]) {
        if (value !== null) event[fields[f] as string] = value;
        else if ((fields[f] as string) in event) delete event[fields[f] as string];
      } else if (value !== absentText) event[fields[f] as string] = strings[value];
      // The object is reused: a field the previous event of this type had must not carry over.
      else if ((fields[f] as string) in event) delete event[fields[f] as string];
    }
    event.seq = firstSeq + i;
    visit(event as unknown as StoredEvent);
  }
  return codes.length;
};

/** The events of a record, each its own object. */
export const decodeLogRecord = (bytes: Uint8Array): StoredEvent[] => {
  const events: StoredEvent[] = [];
  visitLogRecord(bytes, (event) => events.push({ ...event }));
  return events;
};
