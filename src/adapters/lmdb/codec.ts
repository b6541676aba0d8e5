import { Packr } from 'msgpackr';
import type { StoredEvent } from '../../domain/events.js';
import type { RequestContext } from '../../domain/request/machine.js';
import type { RequestState, RequestStatus } from '../../domain/request/state.js';

/**
 * How the store writes its values (MessagePack through msgpackr). Every value is self-contained: nothing outside
 * it (no structure table kept elsewhere) is needed to read it, so any record can be read on its own, by any process,
 * in any order. Encoding the same value always gives the same bytes, which `airs replay --verify` relies on: it
 * compares views as encoded values.
 */

/** Log records: the events of one batch. Records (msgpackr's extension) are defined inside each message, so the
 * shape of an event type is written once per batch and each event after it costs only its values. */
const logPackr = new Packr({ useRecords: true });
/** Accounts and keys: plain maps (they are few; their key order is the fold's, the same in the server and verify).
 * Also the request view's positional array and the id lists of grouped indexes. */
const mapPackr = new Packr({ useRecords: false });

export const encodeEvents = (events: readonly StoredEvent[]): Buffer => logPackr.pack(events);
export const decodeEvents = (bytes: Uint8Array): StoredEvent[] => logPackr.unpack(bytes) as StoredEvent[];

export const encodeMap = (value: object): Buffer => mapPackr.pack(value);
export const decodeMap = <T>(bytes: Uint8Array): T => mapPackr.unpack(bytes) as T;

/** A group of a grouped index: the ids in it, sorted. */
export const encodeIds = (ids: readonly string[]): Buffer => mapPackr.pack(ids);
export const decodeIds = (bytes: Uint8Array): string[] => mapPackr.unpack(bytes) as string[];

/**
 * The request record: the request's view, then the text it holds now (its prompt while it is queued, its response
 * once it is completed, nothing once it failed or expired: text is kept only while it is needed, see
 * docs/decisions.md). The view is read on every poll and written twice per request, so it is a positional array
 * (no field names, and the same bytes whatever order the fold added the fields in), prefixed by its length so that
 * reading it never decodes the text. The array's first element is the layout version; fields are only ever added at
 * the end.
 *
 *   [view length: uint32 LE][view: msgpack array][text: UTF-8]
 */
const viewVersion = 1;
const lengthBytes = 4;
const absent = null;

/** The view alone, encoded (what `replay --verify` compares). */
export const encodeView = ({ status, context: c }: RequestState): Buffer =>
  mapPackr.pack([
    viewVersion,
    status,
    c.reqId,
    c.accountId,
    c.keyId,
    c.model,
    c.promptChars,
    c.createdAt,
    c.expiresAt,
    c.attempts,
    c.availableAt,
    c.lastError ?? absent,
    c.responseChars ?? absent,
    c.completedAt ?? absent,
    c.failedAt ?? absent,
    c.failureReason ?? absent,
    c.expiredAt ?? absent,
    c.startedAt ?? absent,
  ]);

/** Which statuses keep text in the record. */
export const holdsText = (status: RequestStatus): boolean =>
  status === 'waiting' || status === 'processing' || status === 'completed';

export const encodeRecord = (state: RequestState, text: string | Uint8Array | undefined): Buffer => {
  const view = encodeView(state);
  const kept = holdsText(state.status) ? text : undefined;
  const textLength = kept === undefined ? 0 : typeof kept === 'string' ? Buffer.byteLength(kept) : kept.length;
  const record = Buffer.allocUnsafe(lengthBytes + view.length + textLength);
  record.writeUInt32LE(view.length, 0);
  view.copy(record, lengthBytes);
  if (typeof kept === 'string') record.write(kept, lengthBytes + view.length);
  else if (kept !== undefined) record.set(kept, lengthBytes + view.length);
  return record;
};

/** Where the view ends inside a record (it starts after the length). */
export const viewEnd = (record: Uint8Array) =>
  lengthBytes +
  ((record[0] as number) | ((record[1] as number) << 8) | ((record[2] as number) << 16)) +
  (record[3] as number) * 0x1000000;

export const viewStart = lengthBytes;

/** The encoded view inside a record. */
export const viewBytesOf = (record: Uint8Array): Uint8Array => record.subarray(viewStart, viewEnd(record));

/** The text inside a record, as bytes (to carry it over into the next record without decoding it). */
export const textBytesOf = (record: Uint8Array): Uint8Array => record.subarray(viewEnd(record));

const optionalFields = [
  'lastError',
  'responseChars',
  'completedAt',
  'failedAt',
  'failureReason',
  'expiredAt',
  'startedAt',
] as const;
const firstOptional = 11;

type ViewTuple = [
  number,
  RequestStatus,
  string,
  string,
  string,
  string,
  number,
  number,
  number,
  number,
  number,
  ...(string | number | null)[],
];

export const decodeView = (record: Uint8Array): RequestState => {
  const t = mapPackr.unpack(viewBytesOf(record)) as ViewTuple;
  if (t[0] !== viewVersion) throw new Error(`request view layout ${t[0]} is not known to this version of airs`);
  const context: { -readonly [K in keyof RequestContext]: RequestContext[K] } = {
    reqId: t[2],
    accountId: t[3],
    keyId: t[4],
    model: t[5],
    promptChars: t[6],
    createdAt: t[7],
    expiresAt: t[8],
    attempts: t[9],
    availableAt: t[10],
  };
  for (let i = 0; i < optionalFields.length; i++) {
    const value = t[firstOptional + i];
    if (value !== absent && value !== undefined)
      (context as Record<string, unknown>)[optionalFields[i] as string] = value;
  }
  return { status: t[1], context };
};

/** A request and the text it holds now (undefined when its status keeps none). */
export const decodeRecord = (record: Uint8Array): { state: RequestState; text: string | undefined } => {
  const state = decodeView(record);
  const text = holdsText(state.status)
    ? Buffer.from(record.buffer, record.byteOffset, record.length).toString('utf8', viewEnd(record))
    : undefined;
  return { state, text };
};
