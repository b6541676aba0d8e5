import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jsonBoundExceeded } from '../../src/domain/jsonBounds.js';

/** Depth and value count of a parsed value, as contract 15 counts them (the reference the byte scan must match). */
const measure = (value: unknown): { depth: number; values: number } => {
  let deepest = 0;
  let values = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [item, depth] = stack.pop() as [unknown, number];
    values++;
    if (item !== null && typeof item === 'object') {
      deepest = Math.max(deepest, depth + 1);
      for (const child of Object.values(item)) stack.push([child, depth + 1]);
    } else deepest = Math.max(deepest, depth);
  }
  return { depth: deepest, values };
};

/** Text that trips a naive scanner: quotes, backslashes, brackets and commas inside strings, and non-ASCII. */
const tricky = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc
    .array(fc.constantFrom('"', '\\', '\\"', '\\\\', '[', ']', '{', '}', ',', ':', ' ', 'é', '€', '😀', 'a'), {
      maxLength: 12,
    })
    .map((parts) => parts.join('')),
);
const { value: jsonValue } = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom(null, true, false, 0, -1.5e-7, 12_345),
    tricky,
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(tricky, tie('value'), { maxKeys: 5 }),
  ),
}));

/** The same value as JSON with any of the white space JSON allows between tokens. */
const serialised = fc.tuple(jsonValue, fc.constantFrom(undefined, 1, '\t', '\r\n  ')).map(([value, indent]) => {
  const text = JSON.stringify(value, null, indent);
  return { value, bytes: Buffer.from(indent === '\r\n  ' ? text.replaceAll('\n', '\r\n') : text, 'utf8') };
});

const unbounded = Number.MAX_SAFE_INTEGER;

describe('The byte scan that bounds JSON bodies before they are parsed', () => {
  it('counts exactly what JSON.parse builds: a body at its own depth and value count passes, one level or one value less is refused naming that bound', () => {
    fc.assert(
      fc.property(serialised, ({ value, bytes }) => {
        const { depth, values } = measure(value);
        expect(jsonBoundExceeded(bytes, { maxDepth: depth, maxValues: values })).toBeUndefined();
        if (depth > 0)
          expect(jsonBoundExceeded(bytes, { maxDepth: depth - 1, maxValues: unbounded })?.bound).toBe('maxJsonDepth');
        if (values > 1)
          expect(jsonBoundExceeded(bytes, { maxDepth: unbounded, maxValues: values - 1 })?.bound).toBe('maxJsonValues');
      }),
      { numRuns: 2_000 },
    );
  });

  it('refuses an array nested two million levels deep at the first level past the bound, naming the limit', () => {
    const bytes = Buffer.from(`${'['.repeat(2_000_000)}${']'.repeat(2_000_000)}`);
    expect(jsonBoundExceeded(bytes, { maxDepth: 64, maxValues: 100_000 })).toEqual({
      bound: 'maxJsonDepth',
      message: 'the JSON body is nested deeper than 64 levels, the limit (maxJsonDepth)',
    });
  });

  it('takes a wide array of exactly the value bound, and refuses one value more naming the limit', () => {
    // The object, its metadata array and the zeros: 2 + 99,998 values, then 2 + 99,999.
    const body = (zeros: number) => Buffer.from(`{"metadata":[${Array.from({ length: zeros }, () => '0').join(',')}]}`);
    expect(jsonBoundExceeded(body(99_998), { maxDepth: 64, maxValues: 100_000 })).toBeUndefined();
    expect(jsonBoundExceeded(body(99_999), { maxDepth: 64, maxValues: 100_000 })).toEqual({
      bound: 'maxJsonValues',
      message: 'the JSON body holds more than 100000 values, the limit (maxJsonValues)',
    });
  });

  it('does not count brackets and commas inside strings, however their quotes are escaped', () => {
    const text = JSON.stringify({ prompt: `[[[{,,,\\"\\\\"${'['.repeat(1_000)}`, k: '\\' });
    expect(jsonBoundExceeded(Buffer.from(text), { maxDepth: 1, maxValues: 3 })).toBeUndefined();
  });
});
