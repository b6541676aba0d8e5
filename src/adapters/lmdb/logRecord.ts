import { Packr } from 'msgpackr';
import type { DomainEvent, StoredEvent } from '../../domain/events.js';

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

/**
 * Every event type's fields in the order they are written. A type's code is its place in this table: append only.
 * A type may gain fields at the end of its list, in a new layout version (the older lists stay, to read older
 * records). A string field may be absent from an event: it is written as -1; an absent number is written as nil.
 */
const layouts = {
  RequestQueued: [
    'reqId',
    'accountId',
    'keyId',
    'model',
    'promptChars',
    'at',
    'expiresAt',
    'input',
    'idempotencyKey',
    'requestHash',
    'maxAttempts',
    'metadata',
  ],
  RequestProcessingStarted: ['reqId', 'attempt', 'at', 'owner', 'leaseUntil'],
  RequestAttemptFailed: ['reqId', 'attempt', 'reason', 'retryAt', 'at', 'owner'],
  RequestCompleted: [
    'reqId',
    'responseChars',
    'at',
    'inputTokens',
    'outputTokens',
    'finishReason',
    'output',
    'owner',
    'attempt',
  ],
  RequestFailed: ['reqId', 'reason', 'at', 'owner', 'attempt'],
  RequestExpired: ['reqId', 'at'],
  AccountCreated: ['accountId', 'email', 'plan', 'at'],
  AccountPlanChanged: ['accountId', 'plan', 'at'],
  AccountSuspended: ['accountId', 'at'],
  AccountResumed: ['accountId', 'at'],
  ApiKeyCreated: ['accountId', 'keyId', 'keyHash', 'prefix', 'at'],
  ApiKeyRevoked: ['accountId', 'keyId', 'at'],
  AccountPasswordSet: ['accountId', 'at'],
  SessionStarted: ['accountId', 'sessionId', 'expiresAt', 'at'],
  SessionEnded: ['accountId', 'sessionId', 'at'],
  ApiKeyNamed: ['accountId', 'keyId', 'name', 'at'],
  RequestCancelled: ['reqId', 'at'],
  RequestLeaseExtended: ['reqId', 'owner', 'attempt', 'leaseUntil', 'at'],
  RequestReleased: ['reqId', 'owner', 'attempt', 'at'],
} as const satisfies {
  readonly [T in DomainEvent['type']]: readonly Exclude<keyof Extract<DomainEvent, { type: T }>, 'type'>[];
};

/** Layout 3 (before a request's metadata was kept): what differs from the current one. */
const layoutThreeChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  RequestQueued: layouts.RequestQueued.filter((field) => field !== 'metadata'),
};
/** Layout 2 (before usage and leases were recorded): what differs from layout 3. */
const layoutTwoChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  RequestQueued: [
    'reqId',
    'accountId',
    'keyId',
    'model',
    'promptChars',
    'at',
    'expiresAt',
    'input',
    'idempotencyKey',
    'requestHash',
  ],
  RequestProcessingStarted: ['reqId', 'attempt', 'at'],
  RequestAttemptFailed: ['reqId', 'attempt', 'reason', 'retryAt', 'at'],
  RequestCompleted: ['reqId', 'responseChars', 'at'],
  RequestFailed: ['reqId', 'reason', 'at'],
};
/** Layout 1 (before cancellation and idempotency keys): what differs from layout 2. */
const layoutOneChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTwoChanges,
  RequestQueued: ['reqId', 'accountId', 'keyId', 'model', 'promptChars', 'at', 'expiresAt'],
};

// Every field of every event is in its layout: an event type gaining a field without it does not compile.
type Missing = {
  [T in DomainEvent['type']]: Exclude<keyof Extract<DomainEvent, { type: T }>, 'type' | (typeof layouts)[T][number]>;
}[DomainEvent['type']];
const everyFieldIsWritten: [Missing] extends [never] ? true : never = true;
void everyFieldIsWritten;

type EventType = keyof typeof layouts;
const types = Object.keys(layouts) as EventType[];
const codeOf = new Map<string, number>(types.map((type, code) => [type, code]));
/** The fields that hold strings (written as indexes into the record's strings). */
const textFields: ReadonlySet<string> = new Set([
  'reqId',
  'accountId',
  'keyId',
  'model',
  'reason',
  'email',
  'plan',
  'keyHash',
  'prefix',
  'sessionId',
  'name',
  'input',
  'idempotencyKey',
  'requestHash',
  'finishReason',
  'output',
  'owner',
  'metadata',
]);
/** Per type code: its fields, and whether each is a string. */
const compile = (layoutOf: (type: EventType) => readonly string[]) =>
  types.map((type) => {
    const fields = layoutOf(type);
    return { type, fields, texts: fields.map((field) => textFields.has(field)) };
  });
const compiled = compile((type) => layouts[type]);
const compiledThree = compile((type) => layoutThreeChanges[type] ?? layouts[type]);
/** Per layout version, the table its records are read with. */
const compiledByVersion: Record<number, typeof compiled> = {
  1: compile((type) => layoutOneChanges[type] ?? layouts[type]),
  2: compile((type) => layoutTwoChanges[type] ?? layouts[type]),
  3: compiledThree,
  4: compiled,
};

const layoutVersion = 4;
/**
 * A record without metadata is written in layout 3, as before metadata was kept: the same bytes, and a data
 * directory that never held metadata stays readable by the airs before this one (it can be rolled back to).
 */
const holdsMetadata = (events: readonly StoredEvent[]) => {
  for (const event of events) if (event.type === 'RequestQueued' && event.metadata !== undefined) return true;
  return false;
};
/** A string field the event does not have. */
const absentText = -1;
const packr = new Packr({ useRecords: false });

type Record5 = [number, number, string[], number[], number[]];

export const encodeLogRecord = (events: readonly StoredEvent[]): Buffer => {
  const strings: string[] = [];
  const indexOf = new Map<string, number>();
  const codes: number[] = [];
  const values: number[] = [];
  const version = holdsMetadata(events) ? layoutVersion : 3;
  const table = version === layoutVersion ? compiled : compiledThree;
  for (const event of events) {
    const code = codeOf.get(event.type);
    if (code === undefined) throw new Error(`the log has no layout for events of type ${event.type}`);
    codes.push(code);
    const { fields, texts } = table[code] as (typeof compiled)[number];
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

const unpackRecord = (bytes: Uint8Array): { record: Record5; table: typeof compiled } => {
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
