import { describe, expect, it } from 'vitest';
import { randomIds } from '../../src/ports/Ids.js';

/**
 * The contract asks for request ids with at least 128 random bits and keys with at least 32 random bytes. A format
 * check alone passes for a shortened, counting or constant random part; these tests decode the random part of many
 * ids and look at every bit position: each must vary across ids about half the time, as random bits do.
 */

const samples = 2_000;

/** The random part's bytes, from its base64url text. */
const decode = (text: string): Buffer => {
  expect(text).toMatch(/^[A-Za-z0-9_-]+$/);
  return Buffer.from(text, 'base64url');
};

/** How often each of the first `bits` bit positions is set, as a share of the samples. */
const bitShares = (values: readonly Buffer[], bits: number): number[] => {
  const counts = new Array<number>(bits).fill(0);
  for (const value of values) {
    for (let bit = 0; bit < bits; bit++) {
      if (((value[bit >> 3] as number) >> (7 - (bit & 7))) & 1) counts[bit] = (counts[bit] as number) + 1;
    }
  }
  return counts.map((count) => count / values.length);
};

/** The bit positions whose share of ones is outside 35–65 % (with 2,000 random ids, 13 standard deviations out). */
const skewedBits = (values: readonly Buffer[], bits: number) =>
  bitShares(values, bits)
    .map((share, bit) => ({ bit, share }))
    .filter(({ share }) => share < 0.35 || share > 0.65);

/** Checks `parts` are random parts of at least `bytes` bytes: all distinct, and every bit varies like a coin. */
const expectRandom = (parts: readonly string[], bytes: number) => {
  const decoded = parts.map(decode);
  for (const value of decoded) expect(value.length).toBeGreaterThanOrEqual(bytes);
  expect(new Set(parts).size).toBe(parts.length);
  expect(skewedBits(decoded, bytes * 8)).toEqual([]);
};

describe('Identifiers and key material', () => {
  it('request ids are req_, 12 hex digits of time and at least 16 random bytes whose every bit is set in 35-65 % of 2,000 ids', () => {
    const ids = Array.from({ length: samples }, () => randomIds.requestId());
    const parts = ids.map((id) => {
      const match = /^req_([0-9a-f]{12})([A-Za-z0-9_-]+)$/.exec(id);
      expect(match, id).not.toBeNull();
      // The time prefix is the creation time (made within this test, give or take the clock's resolution).
      expect(Math.abs(Number.parseInt(match?.[1] as string, 16) - Date.now())).toBeLessThan(60_000);
      return match?.[2] as string;
    });
    expectRandom(parts, 16);
  });

  it('successive request ids differ in more than 20 of their 128 random bits, as random draws do and a counter does not', () => {
    const parts = Array.from({ length: samples }, () => randomIds.requestId().slice(16)).map(decode);
    for (let i = 1; i < parts.length; i++) {
      const a = parts[i - 1] as Buffer;
      const b = parts[i] as Buffer;
      let differing = 0;
      for (let at = 0; at < Math.min(a.length, b.length); at++) {
        for (let x = (a[at] as number) ^ (b[at] as number); x !== 0; x &= x - 1) differing++;
      }
      // Two random 128-bit strings differ in 64 bits on average (standard deviation 5.7).
      expect(differing).toBeGreaterThan(20);
    }
  });

  it('keys are sk_ and at least 32 random bytes whose every bit is set in 35-65 % of 2,000 keys', () => {
    const keys = Array.from({ length: samples }, () => randomIds.apiKey());
    const parts = keys.map((key) => {
      expect(key.startsWith('sk_'), key).toBe(true);
      return key.slice(3);
    });
    expectRandom(parts, 32);
  });

  it('account and key ids are acct_ and key_ and 12 random bytes whose every bit is set in 35-65 % of 2,000 ids', () => {
    const accounts = Array.from({ length: samples }, () => randomIds.accountId());
    const keyIds = Array.from({ length: samples }, () => randomIds.keyId());
    expectRandom(
      accounts.map((id) => id.replace(/^acct_/, '')),
      12,
    );
    expectRandom(
      keyIds.map((id) => id.replace(/^key_/, '')),
      12,
    );
  });
});
