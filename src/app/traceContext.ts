import { createHash, randomBytes } from 'node:crypto';

/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) for the calls airs makes to upstreams. A request's trace
 * id is derived from its id (the first 128 bits of its SHA-256): every attempt of a request, in whichever process or
 * node runs it, is one trace without anything stored, and an operator holding the request id can compute it.
 */

const allZeros = /^0+$/;
const traceparentForm = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** The trace id of a request: 32 lower-case hex digits, never all zeros (which the standard calls invalid). */
export const traceIdOf = (reqId: string): string => {
  const id = createHash('sha256').update(reqId).digest('hex').slice(0, 32);
  return allZeros.test(id) ? '00000000000000000000000000000001' : id;
};

/** A span id for one call: 64 random bits, never all zeros. */
const freshSpanId = (): string => {
  const id = randomBytes(8).toString('hex');
  return allZeros.test(id) ? '0000000000000001' : id;
};

/** The `traceparent` of one upstream call of a request: version 00, its trace id, a fresh span id, sampled. */
export const traceparentFor = (reqId: string): string => `00-${traceIdOf(reqId)}-${freshSpanId()}-01`;

/**
 * The trace id of an incoming `traceparent`, when it is valid as the standard says (a version other than 00 is read
 * by its first four fields, as the standard asks of a parser); otherwise undefined. Bounded: a header longer than
 * any valid one is not read.
 */
export const traceIdFromHeader = (header: string | null | undefined): string | undefined => {
  if (header == null || header.length > 512) return undefined;
  const match = traceparentForm.exec(header.trim());
  if (match === null) return undefined;
  const [, version, traceId, spanId, , rest] = match;
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined;
  if (allZeros.test(traceId as string) || allZeros.test(spanId as string)) return undefined;
  return traceId;
};
