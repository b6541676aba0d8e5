import { describe, expect, it } from 'vitest';
import { fitsIdBound, idForMessage, lifetimeInWords, maxIdLength } from '../../src/domain/identifiers.js';

describe('bounds on names and the words for a lifetime', () => {
  it('lets ids up to the bound through and no longer ones', () => {
    expect(fitsIdBound('x'.repeat(maxIdLength))).toBe(true);
    expect(fitsIdBound('x'.repeat(maxIdLength + 1))).toBe(false);
  });

  it('cuts an id in a message to 100 characters and marks the cut', () => {
    expect(idForMessage('req_abc')).toBe('req_abc');
    expect(idForMessage('y'.repeat(5_000))).toBe(`${'y'.repeat(100)}…`);
  });

  it.each([
    [86_400, '24 hours'],
    [3_600, '1 hour'],
    [7 * 86_400, '7 days'],
    [120, '2 minutes'],
    [90, '90 seconds'],
    [1, '1 second'],
  ])('says %i seconds as "%s"', (seconds, words) => {
    expect(lifetimeInWords(seconds)).toBe(words);
  });
});
