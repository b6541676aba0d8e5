import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, requestHashOf } from '../../src/app/requestHash.js';

/** The recursive form that canonicalJson replaced: hashes stored by earlier versions were made from its text. */
const recursiveCanonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(recursiveCanonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${recursiveCanonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
};

const nested = (depth: number) => {
  let value: unknown = 'core';
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value, i] : { [`k${i}`]: value, a: null };
  return value;
};

describe('The canonical form behind idempotency hashes', () => {
  it('is the same text as the recursive form it replaced, for any JSON value (stored hashes keep matching)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), fc.jsonValue(), (a, b) => {
        expect(canonicalJson(a)).toBe(recursiveCanonical(a));
        expect(canonicalJson(['responses', a, { b }])).toBe(recursiveCanonical(['responses', a, { b }]));
      }),
      { numRuns: 1_000 },
    );
  });

  it('does not depend on key order at any depth', () => {
    expect(requestHashOf({ b: [{ y: 1, x: 2 }], a: 'a' })).toBe(requestHashOf({ a: 'a', b: [{ x: 2, y: 1 }] }));
  });

  it('hashes a value nested 200,000 levels deep without overflowing the stack', () => {
    const deep = nested(200_000);
    expect(() => recursiveCanonical(deep)).toThrow(RangeError);
    expect(requestHashOf(['ai', deep])).toMatch(/^[A-Za-z0-9_-]{22}$/);
  });
});
