import { Packr } from 'msgpackr';
import type { RequestContext } from '../../domain/request/machine.js';
import { holdsText } from '../../domain/request/retention.js';
import type { RequestState, RequestStatus } from '../../domain/request/state.js';

export { holdsText };

/**
 * How the store writes its values (MessagePack through msgpackr). Every value is self-contained: nothing outside
 * it (no structure table kept elsewhere) is needed to read it, so any record can be read on its own, by any process,
 * in any order. Encoding the same value always gives the same bytes, which `airs replay --verify` relies on: it
 * compares views as encoded values.
 */

/** Accounts and keys: plain maps (they are few; their key order is the fold's, the same in the server and verify).
 * Also the request view's positional array and the id lists of grouped indexes. */
const mapPackr = new Packr({ useRecords: false });

export const encodeMap = (value: object): Buffer => mapPackr.pack(value);
export const decodeMap = <T>(bytes: Uint8Array): T => mapPackr.unpack(bytes) as T;

/** A group of a grouped index: the ids in it, sorted. */
export const encodeIds = (ids: readonly string[]): Buffer => mapPackr.pack(ids);
export const decodeIds = (bytes: Uint8Array): string[] => mapPackr.unpack(bytes) as string[];
/** How many ids a group holds, read from its array header alone (nothing decoded). */
export const countIds = (bytes: Uint8Array): number => {
  const head = bytes[0] as number;
  if (head >= 0x90 && head <= 0x9f) return head & 0x0f;
  if (head === 0xdc) return ((bytes[1] as number) << 8) | (bytes[2] as number);
  if (head === 0xdd)
    return (
      (bytes[1] as number) * 0x1000000 +
      (((bytes[2] as number) << 16) | ((bytes[3] as number) << 8) | (bytes[4] as number))
    );
  return decodeIds(bytes).length;
};

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
/** Where the view begins inside a record (after its length). */
export const viewStart = lengthBytes;

/**
 * The view is written as MessagePack by hand, into one scratch buffer: a fixed array of numbers, strings and nils
 * is simple to write, and this is the hottest encoding of the store (every change of every request, every view a
 * verification compares); msgpackr decodes it like any other MessagePack.
 */
let scratch = Buffer.allocUnsafe(4096);
let at = 0;
/** Node's own UTF-8 writer under `Buffer#write`, without the argument checks `write` makes on every call. */
export const utf8Write = (
  Buffer.prototype as unknown as { utf8Write: (text: string, offset: number, length: number) => number }
).utf8Write;
const put = (byte: number) => {
  scratch[at++] = byte;
};
const writeNumber = (n: number) => {
  if (Number.isInteger(n) && n >= 0 && n < 0x100000000) {
    if (n < 0x80) put(n);
    else if (n < 0x100) {
      put(0xcc);
      put(n);
    } else if (n < 0x10000) {
      put(0xcd);
      at = scratch.writeUInt16BE(n, at);
    } else {
      put(0xce);
      at = scratch.writeUInt32BE(n, at);
    }
  } else {
    put(0xcb);
    at = scratch.writeDoubleBE(n, at);
  }
};
/** Short ASCII strings (ids, models, statuses: nearly every string of a view) are copied byte by byte: cheaper than
 * the two native calls of measuring and writing UTF-8. Returns false, having written nothing, for anything else. */
const writeShortAscii = (text: string): boolean => {
  const length = text.length;
  if (length >= 32) return false;
  const start = at + 1;
  for (let i = 0; i < length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x80) return false;
    scratch[start + i] = code;
  }
  scratch[at] = 0xa0 | length;
  at = start + length;
  return true;
};
const writeString = (text: string) => {
  if (writeShortAscii(text)) return;
  const length = Buffer.byteLength(text);
  if (length < 32) put(0xa0 | length);
  else if (length < 0x100) {
    put(0xd9);
    put(length);
  } else if (length < 0x10000) {
    put(0xda);
    at = scratch.writeUInt16BE(length, at);
  } else {
    put(0xdb);
    at = scratch.writeUInt32BE(length, at);
  }
  at += utf8Write.call(scratch, text, at, length);
};
const writeOptional = (value: string | number | undefined) => {
  if (value === undefined) put(0xc0);
  else if (typeof value === 'number') writeNumber(value);
  else writeString(value);
};
/** Fields every view has (the version and status included); newer optional fields follow only when present, so a
 * view without them has the same bytes as before they existed. */
const viewFields = 18;

/** Newer optional fields, in the order they follow the fixed ones: a view holds them up to the last one it has. */
const trailingFieldsOf = (c: RequestContext): number => {
  if (c.serviceTier !== undefined) return 22;
  if (c.cancelReason !== undefined) return 21;
  if (c.deadlineAt !== undefined) return 20;
  if (c.servedBy !== undefined) return 19;
  if (c.upstream !== undefined) return 18;
  if (c.affinity !== undefined) return 17;
  if (c.face !== undefined) return 16;
  if (c.failureSaid !== undefined) return 15;
  if (c.customId !== undefined) return 14;
  if (c.batchId !== undefined) return 13;
  if (c.metadata !== undefined) return 12;
  if (c.maxAttempts !== undefined) return 11;
  if (c.leaseUntil !== undefined) return 10;
  if (c.owner !== undefined) return 9;
  if (c.output !== undefined) return 8;
  if (c.finishReason !== undefined) return 7;
  if (c.outputTokens !== undefined) return 6;
  if (c.inputTokens !== undefined) return 5;
  if (c.requestHash !== undefined) return 4;
  if (c.idempotencyKey !== undefined) return 3;
  if (c.input !== undefined) return 2;
  if (c.cancelledAt !== undefined) return 1;
  return 0;
};

/** Writes the view of `state` into the scratch buffer; returns its length. */
const writeView = ({ status, context: c }: RequestState): number => {
  // Room for the fixed part, and for every string at three bytes a character (UTF-8's worst case for JS strings).
  const room =
    200 +
    3 *
      (c.reqId.length +
        c.accountId.length +
        c.keyId.length +
        c.model.length +
        (c.lastError?.length ?? 0) +
        (c.failureReason?.length ?? 0) +
        (c.idempotencyKey?.length ?? 0) +
        (c.requestHash?.length ?? 0) +
        (c.finishReason?.length ?? 0) +
        (c.owner?.length ?? 0) +
        (c.metadata?.length ?? 0) +
        (c.batchId?.length ?? 0) +
        (c.customId?.length ?? 0) +
        (c.failureSaid?.length ?? 0) +
        (c.face?.length ?? 0) +
        (c.upstream?.length ?? 0) +
        (c.servedBy?.length ?? 0) +
        (c.cancelReason?.length ?? 0) +
        (c.serviceTier?.length ?? 0));
  if (scratch.length < room) scratch = Buffer.allocUnsafe(room * 2);
  at = 0;
  const trailing = trailingFieldsOf(c);
  put(0xdc);
  at = scratch.writeUInt16BE(viewFields + trailing, at);
  writeNumber(viewVersion);
  writeString(status);
  writeString(c.reqId);
  writeString(c.accountId);
  writeString(c.keyId);
  writeString(c.model);
  writeNumber(c.promptChars);
  writeNumber(c.createdAt);
  writeNumber(c.expiresAt);
  writeNumber(c.attempts);
  writeNumber(c.availableAt);
  writeOptional(c.lastError);
  writeOptional(c.responseChars);
  writeOptional(c.completedAt);
  writeOptional(c.failedAt);
  writeOptional(c.failureReason);
  writeOptional(c.expiredAt);
  writeOptional(c.startedAt);
  if (trailing > 0) writeOptional(c.cancelledAt);
  if (trailing > 1) writeOptional(c.input);
  if (trailing > 2) writeOptional(c.idempotencyKey);
  if (trailing > 3) writeOptional(c.requestHash);
  if (trailing > 4) writeOptional(c.inputTokens);
  if (trailing > 5) writeOptional(c.outputTokens);
  if (trailing > 6) writeOptional(c.finishReason);
  if (trailing > 7) writeOptional(c.output);
  if (trailing > 8) writeOptional(c.owner);
  if (trailing > 9) writeOptional(c.leaseUntil);
  if (trailing > 10) writeOptional(c.maxAttempts);
  if (trailing > 11) writeOptional(c.metadata);
  if (trailing > 12) writeOptional(c.batchId);
  if (trailing > 13) writeOptional(c.customId);
  if (trailing > 14) writeOptional(c.failureSaid);
  if (trailing > 15) writeOptional(c.face);
  if (trailing > 16) writeOptional(c.affinity);
  if (trailing > 17) writeOptional(c.upstream);
  if (trailing > 18) writeOptional(c.servedBy);
  if (trailing > 19) writeOptional(c.deadlineAt);
  if (trailing > 20) writeOptional(c.cancelReason);
  if (trailing > 21) writeOptional(c.serviceTier);
  return at;
};

/** The view alone, encoded. */
export const encodeView = (state: RequestState): Buffer => Buffer.from(scratch.subarray(0, writeView(state)));

/** Whether `record` holds exactly the view of `state`, compared as encoded bytes (what `replay --verify` does). */
export const viewMatches = (state: RequestState, record: Uint8Array): boolean =>
  scratch.compare(record, viewStart, viewEnd(record), 0, writeView(state)) === 0;

export const encodeRecord = (state: RequestState, text: string | Uint8Array | undefined): Buffer => {
  const viewLength = writeView(state);
  const kept = holdsText(state.status) ? text : undefined;
  const textLength = kept === undefined ? 0 : typeof kept === 'string' ? Buffer.byteLength(kept) : kept.length;
  const record = Buffer.allocUnsafe(lengthBytes + viewLength + textLength);
  record.writeUInt32LE(viewLength, 0);
  scratch.copy(record, lengthBytes, 0, viewLength);
  if (typeof kept === 'string') record.write(kept, lengthBytes + viewLength);
  else if (kept !== undefined) record.set(kept, lengthBytes + viewLength);
  return record;
};

/** Where the view ends inside a record (it starts after the length). */
export const viewEnd = (record: Uint8Array) =>
  lengthBytes +
  ((record[0] as number) | ((record[1] as number) << 8) | ((record[2] as number) << 16)) +
  (record[3] as number) * 0x1000000;

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
  'cancelledAt',
  'input',
  'idempotencyKey',
  'requestHash',
  'inputTokens',
  'outputTokens',
  'finishReason',
  'output',
  'owner',
  'leaseUntil',
  'maxAttempts',
  'metadata',
  'batchId',
  'customId',
  'failureSaid',
  'face',
  'affinity',
  'upstream',
  'servedBy',
  'deadlineAt',
  'cancelReason',
  'serviceTier',
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
