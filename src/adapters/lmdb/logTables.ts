import type { StoredEvent } from '../../domain/events.js';
import {
  type EventType,
  layoutEightChanges,
  layoutFiveChanges,
  layoutFourChanges,
  layoutOneChanges,
  layoutSixChanges,
  layouts,
  layoutTenChanges,
  layoutThreeChanges,
  layoutTwoChanges,
} from './logLayouts.js';

/** The layout versions' tables (by type code: fields, which are strings) and the version a record is written in. */

const types = Object.keys(layouts) as EventType[];
export const codeOf = new Map<string, number>(types.map((type, code) => [type, code]));
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
/** One layout version's table. */
export type LayoutTable = typeof compiled;
const compiledThree = compile((type) => layoutThreeChanges[type] ?? layouts[type]);
const compiledFour = compile((type) => layoutFourChanges[type] ?? layouts[type]);
const compiledFive = compile((type) => layoutFiveChanges[type] ?? layouts[type]);
const compiledSix = compile((type) => layoutSixChanges[type] ?? layouts[type]);
const compiledEight = compile((type) => layoutEightChanges[type] ?? layouts[type]);
const compiledTen = compile((type) => layoutTenChanges[type] ?? layouts[type]);
/** Per layout version, the table its records are read with. */
export const compiledByVersion: Record<number, typeof compiled> = {
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
export const versionFor = (events: readonly StoredEvent[]): number => {
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
/** Per version a record is written in (3 and up), the table it is written with. */
export const tableOf: Record<number, typeof compiled> = {
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
