import { createHash } from 'node:crypto';

/** JSON with object keys sorted at every depth: two bodies that differ only in key order are the same body. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};

/**
 * What identifies a submit's body for its idempotency key: SHA-256 of the route and the parsed body in canonical
 * form (128 bits, base64url). A repeat must carry the same; stored with the request, never the body itself.
 */
export const requestHashOf = (fingerprint: unknown): string =>
  createHash('sha256').update(canonical(fingerprint)).digest('base64url').slice(0, 22);
