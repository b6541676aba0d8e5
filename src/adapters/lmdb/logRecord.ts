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
    'batchId',
    'customId',
    'face',
    'affinity',
    'deadlineAt',
    'serviceTier',
  ],
  RequestProcessingStarted: ['reqId', 'attempt', 'at', 'owner', 'leaseUntil', 'upstream', 'servedBy'],
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
    'firstTokenMs',
  ],
  RequestFailed: ['reqId', 'reason', 'at', 'owner', 'attempt', 'said', 'permanent'],
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
  RequestCancelled: ['reqId', 'at', 'reason'],
  RequestLeaseExtended: ['reqId', 'owner', 'attempt', 'leaseUntil', 'at'],
  RequestReleased: ['reqId', 'owner', 'attempt', 'at'],
  BatchCreated: [
    'batchId',
    'accountId',
    'keyId',
    'endpoint',
    'inputFileId',
    'completionWindow',
    'at',
    'expiresAt',
    'metadata',
    'outputExpiresAfterSeconds',
  ],
  BatchTaken: ['batchId', 'owner', 'leaseUntil', 'at'],
  BatchValidationFailed: ['batchId', 'owner', 'errors', 'at'],
  BatchStarted: ['batchId', 'owner', 'total', 'model', 'at'],
  BatchCancelRequested: ['batchId', 'at'],
  BatchWindowClosed: ['batchId', 'at'],
  BatchFinalizing: ['batchId', 'owner', 'queued', 'done', 'at'],
  BatchEnded: ['batchId', 'owner', 'outputFileId', 'errorFileId', 'completed', 'failed', 'at'],
  FileCreated: ['fileId', 'accountId', 'purpose', 'filename', 'bytes', 'sha256', 'at', 'expiresAt'],
  FileDeleted: ['fileId', 'at', 'reason'],
  RequestOwnerGone: ['reqId', 'owner', 'attempt', 'at'],
  BatchOwnerGone: ['batchId', 'owner', 'at'],
  WebhookEndpointAdded: ['endpointId', 'accountId', 'url', 'events', 'secretId', 'at'],
  WebhookEndpointRemoved: ['endpointId', 'at'],
  WebhookSecretRotated: ['endpointId', 'secretId', 'previousSecretId', 'previousValidUntil', 'at'],
  WebhookEndpointDisabled: ['endpointId', 'failingSince', 'at'],
  WebhookEndpointEnabled: ['endpointId', 'at'],
  WebhookDeliveryDue: [
    'deliveryId',
    'endpointId',
    'accountId',
    'eventId',
    'eventType',
    'dataId',
    'createdAt',
    'giveUpAt',
    'at',
  ],
  WebhookAttemptStarted: ['deliveryId', 'endpointId', 'attempt', 'owner', 'leaseUntil', 'at'],
  WebhookAttemptFailed: [
    'deliveryId',
    'endpointId',
    'retryAt',
    'at',
    'attempt',
    'owner',
    'status',
    'latencyMs',
    'error',
  ],
  WebhookDelivered: ['deliveryId', 'endpointId', 'at', 'attempt', 'owner', 'status', 'latencyMs', 'error'],
  WebhookDeliveryGaveUp: [
    'deliveryId',
    'endpointId',
    'reason',
    'at',
    'attempt',
    'owner',
    'status',
    'latencyMs',
    'error',
  ],
  WebhookRedeliveryRequested: ['deliveryId', 'endpointId', 'giveUpAt', 'at'],
  FileUploadStarted: ['fileId', 'accountId', 'reservedBytes', 'at', 'heldUntil'],
  FileUploadEnded: ['fileId', 'accountId', 'at', 'outcome'],
  BatchWorkFailed: ['batchId', 'owner', 'step', 'reason', 'at'],
  BatchFinalizingCancelled: ['batchId', 'at'],
  RequestUpstreamChanged: ['reqId', 'owner', 'attempt', 'from', 'to', 'reason', 'at'],
  ApiKeyExpiresAt: ['accountId', 'keyId', 'expiresAt', 'at'],
  AccountLimitsSet: ['accountId', 'limits', 'at'],
  AdminKeyCreated: ['keyId', 'keyHash', 'prefix', 'name', 'at'],
  AdminKeyRevoked: ['keyId', 'at'],
  AdminActed: ['accountId', 'adminKeyId', 'action', 'at'],
  BatchQuotaSpent: ['batchId', 'owner', 'budget', 'at'],
  WebhookEndpointRecovered: ['endpointId', 'failingSince', 'at'],
  WebhookDeliveryReleased: ['deliveryId', 'endpointId', 'at'],
} as const satisfies {
  readonly [T in DomainEvent['type']]: readonly Exclude<keyof Extract<DomainEvent, { type: T }>, 'type'>[];
};

/** Layouts 9 and 10 (before deadlines: issue 43): what differs. Every older layout differs in these too. */
const queuedOfTen = layouts.RequestQueued.filter((field) => field !== 'deadlineAt' && field !== 'serviceTier');
const layoutTenChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  RequestQueued: queuedOfTen,
  RequestCancelled: layouts.RequestCancelled.filter((field) => field !== 'reason'),
};
/** Layouts 7 and 8 (before a model's upstreams: issue 41): what differs. Issue 41's types are never read with them. */
const queuedOfEight = queuedOfTen.filter((field) => field !== 'affinity');
const startedOfEight = layouts.RequestProcessingStarted.filter((field) => field !== 'upstream' && field !== 'servedBy');
const completedOfEight = layouts.RequestCompleted.filter((field) => field !== 'firstTokenMs');
const layoutEightChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTenChanges,
  RequestQueued: queuedOfEight,
  RequestProcessingStarted: startedOfEight,
  RequestCompleted: completedOfEight,
};
/** Layout 6 (before webhooks, and a request's face): what differs. Webhook events are never read with it. */
const queuedOfSix = queuedOfEight.filter((field) => field !== 'face');
const layoutSixChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTenChanges,
  RequestQueued: queuedOfSix,
  RequestProcessingStarted: startedOfEight,
  RequestCompleted: completedOfEight,
};
/** Layout 5 (before a failure said what the caller is told, and whether it was for good at once): what differs. */
const layoutFiveChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutSixChanges,
  RequestFailed: layouts.RequestFailed.filter((field) => field !== 'said' && field !== 'permanent'),
};
/** Layout 4 (before batches and files): what differs from layout 5. */
const layoutFourChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutFiveChanges,
  RequestQueued: queuedOfSix.filter((field) => field !== 'batchId' && field !== 'customId'),
};
/** Layout 3 (before a request's metadata was kept): what differs from the current one. */
const layoutThreeChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutFiveChanges,
  RequestQueued: (layoutFourChanges.RequestQueued ?? []).filter((field) => field !== 'metadata'),
};
/** Layout 2 (before usage and leases were recorded): what differs from layout 3. */
const layoutTwoChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTenChanges,
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
  'batchId',
  'customId',
  'endpoint',
  'inputFileId',
  'completionWindow',
  'errors',
  'outputFileId',
  'errorFileId',
  'fileId',
  'purpose',
  'filename',
  'sha256',
  'said',
  'face',
  'endpointId',
  'url',
  'secretId',
  'previousSecretId',
  'deliveryId',
  'eventId',
  'eventType',
  'dataId',
  'error',
  'outcome',
  'step',
  'upstream',
  'servedBy',
  'from',
  'to',
  'adminKeyId',
  'action',
]);
/** Per type code: its fields, and whether each is a string. */
const compile = (layoutOf: (type: EventType) => readonly string[]) =>
  types.map((type) => {
    const fields = layoutOf(type);
    return { type, fields, texts: fields.map((field) => textFields.has(field)) };
  });
const compiled = compile((type) => layouts[type]);
const compiledThree = compile((type) => layoutThreeChanges[type] ?? layouts[type]);
const compiledFour = compile((type) => layoutFourChanges[type] ?? layouts[type]);
const compiledFive = compile((type) => layoutFiveChanges[type] ?? layouts[type]);
const compiledSix = compile((type) => layoutSixChanges[type] ?? layouts[type]);
const compiledEight = compile((type) => layoutEightChanges[type] ?? layouts[type]);
const compiledTen = compile((type) => layoutTenChanges[type] ?? layouts[type]);
/** Per layout version, the table its records are read with. */
const compiledByVersion: Record<number, typeof compiled> = {
  1: compile((type) => layoutOneChanges[type] ?? layouts[type]),
  2: compile((type) => layoutTwoChanges[type] ?? layouts[type]),
  3: compiledThree,
  4: compiledFour,
  5: compiledFive,
  6: compiledSix,
  7: compiledEight,
  8: compiledEight,
  9: compiledTen,
  10: compiledTen,
  11: compiled,
};
/** The event types layout 8 added (appended to the table: an older airs has no code for them). */
const typesOfEight: ReadonlySet<string> = new Set([
  'FileUploadStarted',
  'FileUploadEnded',
  'BatchWorkFailed',
  'BatchFinalizingCancelled',
]);
/** The event types layout 9 added (issue 41: a model's upstreams). */
const typesOfNine: ReadonlySet<string> = new Set(['RequestUpstreamChanged']);
/** The event types layout 10 added (issue 42: a key's expiry, an account's own limits, admin keys and actions, a batch's spent budget, an endpoint's recovery and a delivery made due by it; `limits` is written as the
 * object it is). The same table as 9: an airs before it refuses the record by its version. */
const typesOfTen: ReadonlySet<string> = new Set([
  'ApiKeyExpiresAt',
  'AccountLimitsSet',
  'AdminKeyCreated',
  'AdminKeyRevoked',
  'AdminActed',
  'BatchQuotaSpent',
  'WebhookEndpointRecovered',
  'WebhookDeliveryReleased',
]);
/** What only layout 11 holds (issue 43): a request's deadline or service tier, a cancel's reason. */
const ofEleven = (event: StoredEvent): boolean =>
  (event.type === 'RequestQueued' && (event.deadlineAt !== undefined || event.serviceTier !== undefined)) ||
  (event.type === 'RequestCancelled' && event.reason !== undefined);
/** What only layout 9 holds: issue 41's types, a request's affinity, an attempt's upstream or serving model, an answer's time to first token. */
const ofNine = (event: StoredEvent): boolean =>
  typesOfNine.has(event.type) ||
  (event.type === 'RequestQueued' && event.affinity !== undefined) ||
  (event.type === 'RequestProcessingStarted' && (event.upstream !== undefined || event.servedBy !== undefined)) ||
  (event.type === 'RequestCompleted' && event.firstTokenMs !== undefined);
/**
 * The oldest layout that holds the record: 3 unless a request keeps metadata (4), the record holds a batch's or a
 * file's event or a batch's line (5), a failure that says what its caller is told (6), or a webhook's event or a
 * request's face (7: an endpoint's `events` filter is written as the list it is), or a type of issue 40 (8: an
 * upload's reservation, a batch's recorded failure or an operator's cancel of its finalizing; the same table, but an
 * airs before it refuses the record by its version rather than misread a type it lacks), issue 41's (9) or issue
 * 42's (10: an endpoint's recovery and the deliveries it makes due, the same table), or a deadline, a service tier or a
 * cancel's reason (11: issue 43, a table whose RequestQueued and RequestCancelled have a field more). A data
 * directory that never held what a newer layout added stays readable by the airs before it (it can be rolled back to).
 */
const versionFor = (events: readonly StoredEvent[]): number => {
  if (events.some(ofEleven)) return 11;
  if (events.some((event) => typesOfTen.has(event.type))) return 10;
  let version = 3;
  for (const event of events) {
    if (ofNine(event)) return 9;
    if (event.type.startsWith('Webhook') || (event.type === 'RequestQueued' && event.face !== undefined)) version = 7;
    else if (event.type === 'RequestFailed' && (event.said !== undefined || event.permanent !== undefined))
      version = Math.max(version, 6);
    else if (typesOfEight.has(event.type)) return 8;
    else if (event.type.startsWith('Batch') || event.type.startsWith('File')) version = Math.max(version, 5);
    else if (event.type !== 'RequestQueued') continue;
    else if (event.batchId !== undefined || event.customId !== undefined) version = Math.max(version, 5);
    else if (event.metadata !== undefined) version = Math.max(version, 4);
  }
  return version;
};
const tableOf: Record<number, typeof compiled> = {
  3: compiledThree,
  4: compiledFour,
  5: compiledFive,
  6: compiledSix,
  7: compiledEight,
  8: compiledEight,
  9: compiledTen,
  10: compiledTen,
  11: compiled,
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
  const version = versionFor(events);
  const table = tableOf[version] as typeof compiled;
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
