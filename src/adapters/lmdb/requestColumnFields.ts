import type { RequestContext } from '../../domain/request/machine.js';
import type { RequestStatus } from '../../domain/request/state.js';

/** How request columns hold a state's fields: status codes, absent numbers, and the check that every field has one. */

export const statuses: readonly RequestStatus[] = [
  'none',
  'waiting',
  'processing',
  'completed',
  'failed',
  'expired',
  'cancelled',
];
export const statusCode: Readonly<Record<RequestStatus, number>> = {
  none: 0,
  waiting: 1,
  processing: 2,
  completed: 3,
  failed: 4,
  expired: 5,
  cancelled: 6,
};

/** A column of numbers; NaN stands for an absent field. */
export const absentNumber = Number.NaN;
export const numberOrUndefined = (value: number): number | undefined => (Number.isNaN(value) ? undefined : value);

// Every field of the context has a column (requestColumns.ts): adding one without a column does not compile.
type Covered =
  | 'reqId'
  | 'accountId'
  | 'keyId'
  | 'model'
  | 'promptChars'
  | 'createdAt'
  | 'expiresAt'
  | 'attempts'
  | 'availableAt'
  | 'lastError'
  | 'responseChars'
  | 'completedAt'
  | 'failedAt'
  | 'failureReason'
  | 'expiredAt'
  | 'startedAt'
  | 'cancelledAt'
  | 'input'
  | 'idempotencyKey'
  | 'requestHash'
  | 'inputTokens'
  | 'outputTokens'
  | 'finishReason'
  | 'output'
  | 'owner'
  | 'leaseUntil'
  | 'maxAttempts'
  | 'metadata'
  | 'batchId'
  | 'customId'
  | 'failureSaid'
  | 'face'
  | 'affinity'
  | 'upstream'
  | 'servedBy'
  | 'deadlineAt'
  | 'cancelReason'
  | 'serviceTier';
const everyFieldHasAColumn: [Exclude<keyof RequestContext, Covered>] extends [never] ? true : never = true;
void everyFieldHasAColumn;
