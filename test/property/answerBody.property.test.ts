import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createDecodedCount } from '../../src/adapters/models/boundedBody.js';
import { asciiJson } from '../support/fakeOpenAi.js';

/**
 * The count an upstream's body is cut off by (boundedBody.ts): its bytes as the JSON's strings decode, whatever the
 * upstream escapes and however the body is cut into chunks. A body is never cut before its answer passes the bound
 * (the count never runs ahead of the decoded size), and never holds more than six bytes per byte counted.
 */

/** Text rich in what JSON escapes: quotes, backslashes, line ends, control characters, and characters beyond ASCII. */
const text = fc
  .array(
    fc.oneof(
      fc.constantFrom('"', '\\', '\n', '\r', '\t', '\u0001', '\u001f', '€', 'é', '😀', 'a', ' ', 'data: ', '\n\n'),
      fc.string({ unit: 'binary', maxLength: 6 }),
    ),
    { maxLength: 40 },
  )
  .map((parts) => parts.join(''));

/** The same JSON as servers write it: JSON.parse's own form, or every character beyond ASCII escaped (Python's). */
const encoding = fc.constantFrom(JSON.stringify, asciiJson);

/** `bytes` cut at the given places (as a network hands a body over), empty chunks included. */
const chunked = (bytes: Buffer, cuts: readonly number[]): Buffer[] => {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const cut of [...at, bytes.length]) {
    chunks.push(bytes.subarray(from, cut));
    from = cut;
  }
  return chunks;
};

const cuts = fc.array(fc.nat(), { maxLength: 12 });
const utf8 = (value: string) => Buffer.byteLength(value);

describe('The decoded count of an upstream’s body', () => {
  it('of a whole answer is its text’s UTF-8 bytes plus the envelope’s, however escaped and cut, never ahead of it and never under a sixth of the bytes read', () => {
    fc.assert(
      fc.property(text, encoding, cuts, (content, encode, at) => {
        const envelope = (value: string) => ({
          id: 'c',
          choices: [{ message: { role: 'assistant', content: value } }],
        });
        const body = Buffer.from(encode(envelope(content)));
        const expected = utf8(JSON.stringify(envelope(''))) + utf8(content);
        const count = createDecodedCount(false);
        let read = 0;
        let counted = 0;
        for (const chunk of chunked(body, at)) {
          counted = count.add(chunk);
          read += chunk.length;
          expect(counted).toBeLessThanOrEqual(expected);
          expect(read).toBeLessThanOrEqual(6 * counted + 5);
        }
        expect(counted).toBe(expected);
      }),
      { numRuns: 500 },
    );
  });

  it('of a stream counts the event not yet ended: its bytes as they decode, whichever blank lines end the others and wherever the chunks are cut', () => {
    const event = fc.record({ content: text, ending: fc.constantFrom('\n\n', '\r\n\r\n', '\r\r', '\n\r\n') });
    fc.assert(
      fc.property(fc.array(event, { maxLength: 6 }), text, encoding, cuts, (ended, last, encode, at) => {
        const line = (content: string) => `data: ${encode({ choices: [{ delta: { content } }] })}`;
        const decoded = (content: string) => utf8(line('')) + utf8(content);
        const stream = `${ended.map(({ content, ending }) => line(content) + ending).join('')}${line(last)}`;
        const count = createDecodedCount(true);
        const largest = Math.max(
          decoded(last),
          ...ended.map(({ content, ending }) => decoded(content) + ending.length),
        );
        let counted = 0;
        for (const chunk of chunked(Buffer.from(stream), at)) {
          counted = count.add(chunk);
          expect(counted).toBeLessThanOrEqual(largest);
        }
        expect(counted).toBe(decoded(last));
      }),
      { numRuns: 500 },
    );
  });
});
