import { describe, expect, it } from 'vitest';
import { createTwoGenerationCache } from '../../src/domain/twoGenerationCache.js';

describe('the two-generation cache', () => {
  it('keeps at most its bound, the oldest generation leaving first, and reads the latest value of a key', () => {
    const cache = createTwoGenerationCache<number>(4);
    for (const [key, value] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
      ['d', 4],
    ] as const)
      cache.set(key, value);
    expect(['a', 'b', 'c', 'd'].map(cache.get)).toEqual([1, 2, 3, 4]);
    cache.set('a', 10);
    cache.set('e', 5);
    // Setting a again moved the young generation (c, d) to the old one and dropped the old one (a, b): b is gone, a
    // lives on with its new value in the young generation beside e.
    expect(['a', 'b', 'c', 'd', 'e'].map(cache.get)).toEqual([10, undefined, 3, 4, 5]);
  });

  it('forgets a deleted key in both generations, and everything when cleared', () => {
    const cache = createTwoGenerationCache<string>(2);
    cache.set('x', 'old');
    cache.set('y', 'young');
    cache.delete('x');
    expect([cache.get('x'), cache.get('y')]).toEqual([undefined, 'young']);
    cache.clear();
    expect(cache.get('y')).toBeUndefined();
  });
});
