import type { DomainEvent } from '../../domain/events.js';

/** Every event type's fields in a log record, in the order they are written, and what older layouts wrote instead. */

/**
 * Every event type's fields in the order they are written. A type's code is its place in this table: append only.
 * A type may gain fields at the end of its list, in a new layout version (the older lists stay, to read older
 * records). A string field may be absent from an event: it is written as -1; an absent number is written as nil.
 */
export const layouts = {
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
export const layoutTenChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  RequestQueued: queuedOfTen,
  RequestCancelled: layouts.RequestCancelled.filter((field) => field !== 'reason'),
};
/** Layouts 7 and 8 (before a model's upstreams: issue 41): what differs. Issue 41's types are never read with them. */
const queuedOfEight = queuedOfTen.filter((field) => field !== 'affinity');
const startedOfEight = layouts.RequestProcessingStarted.filter((field) => field !== 'upstream' && field !== 'servedBy');
const completedOfEight = layouts.RequestCompleted.filter((field) => field !== 'firstTokenMs');
export const layoutEightChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTenChanges,
  RequestQueued: queuedOfEight,
  RequestProcessingStarted: startedOfEight,
  RequestCompleted: completedOfEight,
};
/** Layout 6 (before webhooks, and a request's face): what differs. Webhook events are never read with it. */
const queuedOfSix = queuedOfEight.filter((field) => field !== 'face');
export const layoutSixChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTenChanges,
  RequestQueued: queuedOfSix,
  RequestProcessingStarted: startedOfEight,
  RequestCompleted: completedOfEight,
};
/** Layout 5 (before a failure said what the caller is told, and whether it was for good at once): what differs. */
export const layoutFiveChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutSixChanges,
  RequestFailed: layouts.RequestFailed.filter((field) => field !== 'said' && field !== 'permanent'),
};
/** Layout 4 (before batches and files): what differs from layout 5. */
export const layoutFourChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutFiveChanges,
  RequestQueued: queuedOfSix.filter((field) => field !== 'batchId' && field !== 'customId'),
};
/** Layout 3 (before a request's metadata was kept): what differs from the current one. */
export const layoutThreeChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutFiveChanges,
  RequestQueued: (layoutFourChanges.RequestQueued ?? []).filter((field) => field !== 'metadata'),
};
/** Layout 2 (before usage and leases were recorded): what differs from layout 3. */
export const layoutTwoChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
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
export const layoutOneChanges: Partial<Record<keyof typeof layouts, readonly string[]>> = {
  ...layoutTwoChanges,
  RequestQueued: ['reqId', 'accountId', 'keyId', 'model', 'promptChars', 'at', 'expiresAt'],
};

// Every field of every event is in its layout: an event type gaining a field without it does not compile.
type Missing = {
  [T in DomainEvent['type']]: Exclude<keyof Extract<DomainEvent, { type: T }>, 'type' | (typeof layouts)[T][number]>;
}[DomainEvent['type']];
const everyFieldIsWritten: [Missing] extends [never] ? true : never = true;
void everyFieldIsWritten;

export type EventType = keyof typeof layouts;
