import { Packr } from 'msgpackr';
import type { DomainEvent } from '../../domain/events.js';
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
/** Accounts and keys: plain maps (they are few; their key order is the fold's, the same in the server and verify). */
const mapPackr = new Packr({ useRecords: false });

export const encodeEvents = (events: readonly DomainEvent[]): Buffer => logPackr.pack(events);
export const decodeEvents = (bytes: Uint8Array): DomainEvent[] => logPackr.unpack(bytes) as DomainEvent[];

export const encodeMap = (value: object): Buffer => mapPackr.pack(value);
export const decodeMap = <T>(bytes: Uint8Array): T => mapPackr.unpack(bytes) as T;

/**
 * The request view is read on every poll and written twice per request, so it is a positional array: no field
 * names, and the same bytes whatever order the fold added the fields in. The first element is the layout version;
 * a field is only ever added at the end.
 */
const viewVersion = 1;
const optionalFields = ['lastError', 'responseChars', 'completedAt', 'failedAt', 'failureReason', 'expiredAt'] as const;
const absent = null;

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
    ...optionalFields.map((field) => c[field] ?? absent),
  ]);

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

const firstOptional = 11;

export const decodeView = (bytes: Uint8Array): RequestState => {
  const t = mapPackr.unpack(bytes) as ViewTuple;
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
    if (value !== absent && value !== undefined) (context as Record<string, unknown>)[optionalFields[i] as string] = value;
  }
  return { status: t[1], context };
};
