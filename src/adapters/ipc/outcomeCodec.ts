import * as errors from '../../domain/errors.js';
import { type CommandOutcome, StorageFault, StoreUnreachable } from '../../ports/Store.js';

/*
 * Outcomes of commands as they cross from the writer process to the process that sent them. The IPC channel's
 * structured clone keeps plain data (events) but not classes: an error arrives as a plain Error or object, and callers
 * tell refusals apart with `instanceof` (`isRefusal`, `instanceof QueueFull`). So every error is written as its tag
 * and fields and made again from its own class on arrival.
 */

/** Every tagged error of the domain, by tag: the classes an outcome's refusal is made again from. */
const taggedClasses: Readonly<Record<string, new (fields: never) => Error>> = {
  InvalidRequest: errors.InvalidRequest,
  PayloadTooLarge: errors.PayloadTooLarge,
  Unauthorized: errors.Unauthorized,
  Forbidden: errors.Forbidden,
  NotFound: errors.NotFound,
  MethodNotAllowed: errors.MethodNotAllowed,
  RateLimited: errors.RateLimited,
  QuotaExceeded: errors.QuotaExceeded,
  ProcessingFailed: errors.ProcessingFailed,
  Unavailable: errors.Unavailable,
  IdempotencyKeyReused: errors.IdempotencyKeyReused,
  Refused: errors.Refused,
  QueueFull: errors.QueueFull,
  AccountLimitReached: errors.AccountLimitReached,
  LifecycleViolation: errors.LifecycleViolation,
  DeliveryLifecycleViolation: errors.DeliveryLifecycleViolation,
};

/** An error as it crosses: a domain error by its tag and fields, a store's fault, or any other error's message. */
export type EncodedError =
  | { readonly tag: string; readonly fields: Record<string, unknown> }
  | { readonly fault: 'StorageFault' | 'StoreUnreachable'; readonly message: string }
  | { readonly error: string; readonly message: string };

export const encodeError = (error: unknown): EncodedError => {
  if (error instanceof Error && '_tag' in error && typeof error._tag === 'string' && error._tag in taggedClasses) {
    // A tagged error's fields are its own enumerable properties, but for `message`, which Error keeps apart.
    return { tag: error._tag, fields: { ...error, message: error.message } };
  }
  if (error instanceof StoreUnreachable) return { fault: 'StoreUnreachable', message: error.message };
  if (error instanceof StorageFault) return { fault: 'StorageFault', message: error.message };
  if (error instanceof Error) return { error: error.name, message: error.message };
  return { error: 'Error', message: String(error) };
};

export const decodeError = (encoded: EncodedError): Error => {
  if ('tag' in encoded) {
    const ctor = taggedClasses[encoded.tag];
    if (ctor !== undefined) return new ctor(encoded.fields as never);
    return Object.assign(new Error(String(encoded.fields.message)), { name: encoded.tag });
  }
  if ('fault' in encoded)
    return encoded.fault === 'StoreUnreachable'
      ? new StoreUnreachable(encoded.message)
      : new StorageFault(encoded.message);
  const error = new Error(encoded.message);
  error.name = encoded.error;
  return error;
};

/** An outcome that appended events travels as it is (plain data); a refusal or a failed command as its error. */
export const encodeOutcome = (outcome: CommandOutcome | Error): unknown =>
  outcome instanceof Error ? { failed: encodeError(outcome) } : outcome;

export const decodeOutcome = (encoded: unknown): CommandOutcome | Error => {
  if (typeof encoded === 'object' && encoded !== null && 'failed' in encoded)
    return decodeError((encoded as { failed: EncodedError }).failed);
  return encoded as CommandOutcome;
};
