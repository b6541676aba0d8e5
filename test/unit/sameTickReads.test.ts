import { describe, expect, it } from 'vitest';
import { sameTickReads } from '../../src/adapters/postgres/sameTickReads.js';

/** The PostgreSQL client's economies (issue 44): the reads asked in one tick are one read. */

describe('reads asked in the same tick', () => {
  it('are made as one read of all their keys, each caller getting its own answer', async () => {
    const reads: string[][] = [];
    const read = sameTickReads(async (keys: readonly string[]) => {
      reads.push([...keys]);
      return keys.map((key) => (key === 'missing' ? undefined : key.toUpperCase()));
    });
    const answers = await Promise.all(['a', 'missing', 'c'].map(read));
    expect(answers).toEqual(['A', undefined, 'C']);
    expect(reads).toEqual([['a', 'missing', 'c']]);
    expect(await read('d')).toBe('D');
    expect(reads).toEqual([['a', 'missing', 'c'], ['d']]);
  });

  it('fail together when their read fails, and the next tick reads again', async () => {
    let fail = true;
    const read = sameTickReads(async (keys: readonly string[]) => {
      if (fail) throw new Error('connection lost');
      return keys;
    });
    const failed = await Promise.allSettled([read('a'), read('b')]);
    expect(failed.map((result) => result.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await read('a')).toBe('a');
  });
});
