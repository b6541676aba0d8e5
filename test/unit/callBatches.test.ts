import { describe, expect, it } from 'vitest';
import { callBatches } from '../../src/storage/callBatches.js';

/** The reads asked in one turn are one read (the accounts version, the requests a claim's attempts read on PostgreSQL). */

describe('reads asked in the same turn of the event loop', () => {
  it('are made as one read of all their keys, each caller getting its own answer', async () => {
    const reads: string[][] = [];
    const read = callBatches(async (keys: readonly string[]) => {
      reads.push([...keys]);
      return keys.map((key) => (key === 'missing' ? undefined : key.toUpperCase()));
    });
    const answers = await Promise.all(['a', 'missing', 'c'].map(read));
    expect(answers).toEqual(['A', undefined, 'C']);
    expect(reads).toEqual([['a', 'missing', 'c']]);
    expect(await read('d')).toBe('D');
    expect(reads).toEqual([['a', 'missing', 'c'], ['d']]);
  });

  it('fail together when their read fails, and the next turn reads again', async () => {
    let fail = true;
    const read = callBatches(async (keys: readonly string[]) => {
      if (fail) throw new Error('connection lost');
      return keys;
    });
    const failed = await Promise.allSettled([read('a'), read('b')]);
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await read('a')).toBe('a');
  });
});
