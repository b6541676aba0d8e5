import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createUpstreamHealthBook } from '../../src/app/processing/upstreamHealthBook.js';

/** A book over a real logger whose lines are kept. */
const bookWith = (threshold = 3) => {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const book = createUpstreamHealthBook({ log: pino({ level: 'info' }, stream), threshold: () => threshold });
  const said = (msg: string) => lines.filter((line) => line.msg === msg);
  return { book, said, lines };
};
// pino writes through the stream synchronously enough for a microtask turn.
const flushed = () => new Promise((resolve) => setImmediate(resolve));

describe("A process's upstream health book", () => {
  it('takes an upstream out after its failures in a row, logs it once with model, upstream, reason and until, and shows it in its view', async () => {
    const { book, said } = bookWith(3);
    book.failed('llama', 'a', 'connection refused', 1_000);
    book.failed('llama', 'a', 'connection refused', 1_001);
    expect(book.view(1_002)).toBeUndefined();
    book.failed('llama', 'a', 'connection refused', 1_002);
    // A call sent before it went out fails too: no second line.
    book.failed('llama', 'a', 'connection refused', 1_003);
    await flushed();
    const out = said('upstream out of service');
    expect(out).toHaveLength(1);
    expect(out[0]).toMatchObject({ model: 'llama', upstream: 'a', reason: 'connection refused' });
    expect(out[0]?.until).toBe(new Date(11_002).toISOString());
    expect(Object.keys(book.view(1_004)?.llama ?? {})).toEqual(['a']);
    expect(book.noneInService('llama', ['a'], 1_004)).toBe(true);
    expect(book.noneInService('llama', ['a', 'b'], 1_004)).toBe(false);
    expect(book.nextEnd(1_004)).toBe(11_002);
    // The view is plain JSON: it travels in commands.
    expect(JSON.parse(JSON.stringify(book.view(1_004)))).toEqual(book.view(1_004));
  });
  it('puts a trying upstream back in service at its first success, logged once, and forgets it', async () => {
    const { book, said } = bookWith(1);
    book.failed('llama', '0', 'answered 500', 0);
    // After its cool-down it is `trying`: still in the view (one trial call), not in service.
    expect(book.view(10_000)?.llama?.['0']).toMatchObject({ outUntil: 10_000 });
    expect(book.nextEnd(10_000)).toBeUndefined();
    book.succeeded('llama', '0');
    book.succeeded('llama', '0');
    await flushed();
    expect(said('upstream back in service')).toEqual([expect.objectContaining({ model: 'llama', upstream: '0' })]);
    expect(book.view(10_001)).toBeUndefined();
  });
  it('lets a success reset the failures in a row: failures apart never take it out', async () => {
    const { book, said } = bookWith(2);
    book.failed('llama', 'a', 'timed out', 0);
    book.succeeded('llama', 'a');
    book.failed('llama', 'a', 'timed out', 1);
    await flushed();
    expect(said('upstream out of service')).toEqual([]);
    expect(said('upstream back in service')).toEqual([]);
    expect(book.view(2)).toBeUndefined();
  });
});
