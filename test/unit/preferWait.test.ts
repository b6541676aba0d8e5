import { describe, expect, it } from 'vitest';
import { preferredWaitSeconds } from '../../src/adapters/http/preferWait.js';

/** `Prefer: wait=N` as RFC 7240 writes it; anything not understood is no wait, never an error. */
describe('the wait preference of a Prefer header', () => {
  it('reads wait=N alone, among other preferences, with spaces around the equals sign, in any case, and quoted', () => {
    expect(preferredWaitSeconds('wait=10')).toBe(10);
    expect(preferredWaitSeconds('respond-async, wait=5')).toBe(5);
    expect(preferredWaitSeconds('return=minimal,wait=7,handling=lenient')).toBe(7);
    expect(preferredWaitSeconds('  WAIT = 3 ')).toBe(3);
    expect(preferredWaitSeconds('Wait="12"')).toBe(12);
    expect(preferredWaitSeconds('wait=0009')).toBe(9);
  });

  it('ignores the parameters of a preference and quoted commas and semicolons in other preferences', () => {
    expect(preferredWaitSeconds('wait=4; foo=bar')).toBe(4);
    expect(preferredWaitSeconds('foo="a, wait=99; b", wait=2')).toBe(2);
  });

  it('takes the first wait when it is given twice, as the RFC says (also across Prefer headers joined by a comma)', () => {
    expect(preferredWaitSeconds('wait=3, wait=30')).toBe(3);
    expect(preferredWaitSeconds('wait=x, wait=30')).toBeUndefined();
  });

  it('is no wait without the header, without a wait preference, or with a value that is not a positive whole number', () => {
    for (const header of [
      null,
      undefined,
      '',
      'respond-async',
      'waiting=5',
      'wait',
      'wait=',
      'wait=0',
      'wait=-5',
      'wait=1.5',
      'wait=5s',
      'wait=1e3',
      'wait=" 5"',
    ]) {
      expect(preferredWaitSeconds(header), String(header)).toBeUndefined();
    }
  });

  it('reads a huge number as a very long wait (for the server to cap), not as Infinity or an imprecise number', () => {
    expect(preferredWaitSeconds(`wait=${'9'.repeat(400)}`)).toBe(Number.MAX_SAFE_INTEGER);
  });

  it('reads only the beginning of an oversized header, in time linear in its length', () => {
    const header = `${'x=1,'.repeat(5_000)}wait=5`;
    expect(preferredWaitSeconds(header)).toBeUndefined();
    expect(preferredWaitSeconds(`wait=5,${'"'.repeat(100_000)}`)).toBe(5);
  });
});
