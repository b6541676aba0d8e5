import { InvalidRequest } from '../../domain/errors.js';

/** 1 to 255 visible ASCII characters (contract 12): what the header may hold. */
const visibleAscii = /^[\x21-\x7e]{1,255}$/;

/**
 * The `Idempotency-Key` header of a submit: absent (`undefined`), a usable key, or why it is not one. A key that is
 * not usable is refused rather than ignored: a client that sends one relies on it to retry safely.
 */
export const idempotencyKeyOf = (header: string | null | undefined): string | undefined | InvalidRequest => {
  if (header === null || header === undefined) return undefined;
  if (visibleAscii.test(header)) return header;
  return new InvalidRequest({
    message:
      header.length === 0
        ? 'Idempotency-Key must not be empty'
        : header.length > 255
          ? `Idempotency-Key is ${header.length} characters long; the maximum is 255`
          : 'Idempotency-Key must be visible ASCII characters (no spaces or control characters)',
  });
};
