import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { editDistance, nearestKey } from '../../src/configIssues.js';

describe('The key a mistyped config key most likely meant', () => {
  it('counts swapping two neighbours as one edit, as a missing or an extra letter', () => {
    expect(editDistance('modles', 'models')).toBe(1);
    expect(editDistance('concurency', 'concurrency')).toBe(1);
    expect(editDistance('prot', 'port')).toBe(1);
    expect(editDistance('colour', 'cors')).toBeGreaterThan(2);
  });

  it('is the nearest known key, ignoring case, only when it is close', () => {
    const known = ['port', 'host', 'models', 'processing', 'processes'];
    expect(nearestKey('modles', known)).toBe('models');
    expect(nearestKey('PORT', known)).toBe('port');
    expect(nearestKey('procesing', known)).toBe('processing');
    expect(nearestKey('colour', known)).toBeUndefined();
    expect(nearestKey('x'.repeat(1_000), known)).toBeUndefined();
  });

  it('is symmetric, zero only for equal keys, and never more than the longer key', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }), (a, b) => {
        const distance = editDistance(a, b);
        expect(distance).toBe(editDistance(b, a));
        expect(distance === 0).toBe(a === b);
        expect(distance).toBeLessThanOrEqual(Math.max(a.length, b.length));
      }),
    );
  });
});
