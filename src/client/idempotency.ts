/**
 * The `Idempotency-Key` of a submit (contract 12): one key per logical submit, sent with every attempt of it, so that
 * a submit whose answer was lost can be sent again without making a second request.
 */

/** What the service accepts: 1 to 255 visible ASCII characters (0x21-0x7E). */
const visibleAscii = /^[\x21-\x7e]{1,255}$/;

export const isIdempotencyKey = (value: unknown): value is string =>
  typeof value === 'string' && visibleAscii.test(value);

/** A key the caller gave, checked before anything is sent (the service would refuse it with a 400). */
export const checkedIdempotencyKey = (value: unknown): string => {
  if (isIdempotencyKey(value)) return value;
  throw new TypeError('idempotencyKey must be 1 to 255 visible ASCII characters (no spaces or control characters)');
};

type RandomSource = {
  readonly randomUUID?: () => string;
  readonly getRandomValues?: <T extends Uint8Array>(array: T) => T;
};

const hex = (bytes: Uint8Array, from: number, to: number) =>
  Array.from(bytes.subarray(from, to), (byte) => byte.toString(16).padStart(2, '0')).join('');

/**
 * A new random key (a UUID v4: 122 random bits). `crypto.randomUUID` where the platform has it; browsers offer it only
 * in secure contexts, so else a UUID is made from `crypto.getRandomValues`, which every current platform has.
 * `undefined` on a platform with neither: the submit then goes without a key, and is not retried after a lost answer.
 */
export const newIdempotencyKey = (): string | undefined => {
  const random = (globalThis as { readonly crypto?: RandomSource }).crypto;
  if (typeof random?.randomUUID === 'function') return random.randomUUID();
  if (typeof random?.getRandomValues !== 'function') return undefined;
  const bytes = random.getRandomValues(new Uint8Array(16));
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  return `${hex(bytes, 0, 4)}-${hex(bytes, 4, 6)}-${hex(bytes, 6, 8)}-${hex(bytes, 8, 10)}-${hex(bytes, 10, 16)}`;
};
