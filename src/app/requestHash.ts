import { createHash } from 'node:crypto';

/** Text to write as it is, told apart from the JSON values (strings among them) still to be written. */
class Literal {
  constructor(readonly text: string) {}
}
const comma = new Literal(',');
const closeArray = new Literal(']');
const closeObject = new Literal('}');

const byKey = ([a]: [string, unknown], [b]: [string, unknown]) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * JSON with object keys sorted at every depth: two bodies that differ only in key order are the same body. A loop
 * over a stack of what is left to write, not a recursion: no body the parser accepts, however deep, can overflow the
 * call stack (a recursive walk threw `RangeError` from about 3,200 levels). The text is the same as that of the
 * recursive form it replaced, so hashes stored by earlier versions still match.
 */
export const canonicalJson = (root: unknown): string => {
  const out: string[] = [];
  const work: unknown[] = [root];
  while (work.length > 0) {
    const value = work.pop();
    if (value instanceof Literal) out.push(value.text);
    else if (Array.isArray(value)) {
      out.push('[');
      work.push(closeArray);
      for (let i = value.length - 1; i >= 0; i--) {
        work.push(value[i]);
        if (i > 0) work.push(comma);
      }
    } else if (value !== null && typeof value === 'object') {
      const entries = Object.entries(value as Record<string, unknown>)
        .filter(([, v]) => v !== undefined)
        .sort(byKey);
      out.push('{');
      work.push(closeObject);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, member] = entries[i] as [string, unknown];
        work.push(member, new Literal(`${JSON.stringify(key)}:`));
        if (i > 0) work.push(comma);
      }
    } else out.push(JSON.stringify(value) ?? 'null');
  }
  return out.join('');
};

/**
 * What identifies a submit's body for its idempotency key: SHA-256 of the route and the parsed body in canonical
 * form (128 bits, base64url). A repeat must carry the same; stored with the request, never the body itself.
 */
export const requestHashOf = (fingerprint: unknown): string =>
  createHash('sha256').update(canonicalJson(fingerprint)).digest('base64url').slice(0, 22);
