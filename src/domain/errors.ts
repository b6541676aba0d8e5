import * as Data from 'effect/Data';

/**
 * Errors the product's rules produce. They know nothing of HTTP: the HTTP adapter maps them to a status
 * and error code in one table (adapters/http/errorResponse.ts), the CLI to a one-line message.
 */

/** The caller's input breaks a rule; `message` says what to fix. */
export class InvalidRequest extends Data.TaggedError('InvalidRequest')<{
  readonly message: string;
  readonly details?: Record<string, unknown>;
}> {}

/** The body is larger than the configured limit. */
export class PayloadTooLarge extends Data.TaggedError('PayloadTooLarge')<{ readonly message: string }> {}

/** No usable API key: missing, malformed, unknown, revoked. */
export class Unauthorized extends Data.TaggedError('Unauthorized')<{ readonly message: string }> {}

/** A valid key whose account may not use the API (suspended). */
export class Forbidden extends Data.TaggedError('Forbidden')<{ readonly message: string }> {}

/** Unknown, foreign or expired request id; unknown path. */
export class NotFound extends Data.TaggedError('NotFound')<{ readonly message: string }> {}

/** A known path called with another method. */
export class MethodNotAllowed extends Data.TaggedError('MethodNotAllowed')<{
  readonly message: string;
  readonly allow: readonly string[];
}> {}

/** The account's budget of this kind of call is spent. */
export class RateLimited extends Data.TaggedError('RateLimited')<{
  readonly message: string;
  readonly retryAfterSeconds: number;
  readonly budget: string;
}> {}

/**
 * A submit refused because the account used its token budget of the day or the month (contract 21, `tokensPerDay`,
 * `tokensPerMonth`): `used` tokens of `limit`, until `resetsAt` (ms). Work already accepted finishes.
 */
export class QuotaExceeded extends Data.TaggedError('QuotaExceeded')<{
  readonly message: string;
  readonly budget: 'tokensPerDay' | 'tokensPerMonth';
  readonly limit: number;
  readonly used: number;
  readonly resetsAt: number;
  /** Whole seconds until `resetsAt` (at least 1). */
  readonly retryAfterSeconds: number;
}> {}

/** The request's processing failed for good (after its retries). */
export class ProcessingFailed extends Data.TaggedError('ProcessingFailed')<{ readonly message: string }> {}

/** Not serving (starting or shutting down). */
export class Unavailable extends Data.TaggedError('Unavailable')<{
  readonly message: string;
  readonly retryAfterSeconds: number;
}> {}

/** An `Idempotency-Key` already used by the account for a submit with another body. */
export class IdempotencyKeyReused extends Data.TaggedError('IdempotencyKeyReused')<{ readonly message: string }> {}

/** A management command the rules refuse (key limit reached, email taken, unknown account...). */
export class Refused extends Data.TaggedError('Refused')<{ readonly message: string }> {}

/**
 * A submit refused because the account already has as many requests waiting or being processed as its plan allows
 * (`count` of them, at least `maxQueued`).
 */
export class QueueFull extends Data.TaggedError('QueueFull')<{
  readonly message: string;
  readonly maxQueued: number;
  readonly count: number;
}> {}

/**
 * A batch or an upload refused inside the store's write because its account is at a bound of its plan: `count` of
 * `limit` taken already (open batches, bytes of files kept, files kept, uploads streaming, or webhook endpoints;
 * `budget` says which: `batches`, `file_storage`, `files`, `concurrent_uploads`, `webhook_endpoints`).
 */
export class AccountLimitReached extends Data.TaggedError('AccountLimitReached')<{
  readonly message: string;
  readonly budget: 'batches' | 'file_storage' | 'files' | 'concurrent_uploads' | 'webhook_endpoints';
  readonly limit: number;
  readonly count: number;
}> {}

/** A lifecycle move the request machine does not allow in the request's current state. */
export class LifecycleViolation extends Data.TaggedError('LifecycleViolation')<{
  readonly reqId: string;
  readonly from: string;
  readonly event: string;
  readonly message: string;
}> {}

/** A move the webhook delivery machine does not allow in the delivery's current state (webhook/deliveryMachine.ts). */
export class DeliveryLifecycleViolation extends Data.TaggedError('DeliveryLifecycleViolation')<{
  readonly deliveryId: string;
  readonly from: string;
  readonly event: string;
  readonly message: string;
}> {}

/** Errors a public API call can end with. */
export type ApiError =
  | InvalidRequest
  | PayloadTooLarge
  | Unauthorized
  | Forbidden
  | NotFound
  | MethodNotAllowed
  | RateLimited
  | QuotaExceeded
  | ProcessingFailed
  | Unavailable
  | IdempotencyKeyReused;
