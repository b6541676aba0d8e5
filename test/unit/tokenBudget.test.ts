import { describe, expect, it } from 'vitest';
import { tokenRefusal } from '../../src/domain/tokens/tokenBudget.js';
import { applyTokenUseChange, type TokenBucket } from '../../src/domain/tokens/tokenUse.js';

const none = { tokensPerMinute: null, tokensPerDay: null, tokensPerMonth: null };
const noon = Date.UTC(2026, 5, 15, 12);
const second = (at: number, tokens: number): TokenBucket => ({ kind: 'second', start: at, tokens });

describe('Token limits (contract 21)', () => {
  it('refuses by the tokens of the last 60 s at tokensPerMinute, and says to retry when the oldest seconds that take it under the limit leave the window', () => {
    const buckets = [
      second(noon - 50_000, 40),
      second(noon - 30_000, 40),
      second(noon - 5_000, 30),
      second(noon - 61_000, 500),
    ];
    const limits = { ...none, tokensPerMinute: 100 };
    // 110 tokens in the window (the bucket 61 s old is out): under 100 once the bucket 50 s old leaves, in 10 s.
    expect(tokenRefusal(limits, buckets, noon)).toEqual({ kind: 'rate', used: 110, limit: 100, retryAfterMs: 10_000 });
    expect(tokenRefusal(limits, buckets, noon + 10_000)).toBeUndefined();
    expect(tokenRefusal({ ...none, tokensPerMinute: 111 }, buckets, noon)).toBeUndefined();
  });

  it('refuses the day and the month budget once used, until midnight UTC and the first of the next month', () => {
    const day: TokenBucket = { kind: 'day', start: Date.UTC(2026, 5, 15), tokens: 70 };
    const month: TokenBucket = { kind: 'month', start: Date.UTC(2026, 5, 1), tokens: 900 };
    expect(tokenRefusal({ ...none, tokensPerDay: 70 }, [day, month], noon)).toEqual({
      kind: 'quota',
      budget: 'tokensPerDay',
      used: 70,
      limit: 70,
      resetsAt: Date.UTC(2026, 5, 16),
    });
    expect(tokenRefusal({ ...none, tokensPerDay: 71 }, [day, month], noon)).toBeUndefined();
    // The month's is named first: it lasts longer.
    expect(tokenRefusal({ ...none, tokensPerDay: 10, tokensPerMonth: 900 }, [day, month], noon)).toMatchObject({
      budget: 'tokensPerMonth',
      resetsAt: Date.UTC(2026, 6, 1),
    });
    // Yesterday's and last month's buckets count for nothing today.
    expect(
      tokenRefusal({ ...none, tokensPerDay: 10, tokensPerMonth: 10 }, [day, month], Date.UTC(2026, 6, 1, 0, 0, 1)),
    ).toBeUndefined();
  });

  it('keeps at most the last minute of seconds, the current day and the current month when tokens are added', () => {
    let buckets: TokenBucket[] = [];
    for (let i = 0; i < 1_000; i++) {
      const at = noon + i * 7_000;
      buckets = applyTokenUseChange(buckets, {
        added: [
          second(Math.floor(at / 1000) * 1000, 1),
          {
            kind: 'day',
            start: Date.UTC(2026, 5, 15 + Math.floor((at - Date.UTC(2026, 5, 15)) / 86_400_000)),
            tokens: 1,
          },
        ],
        latestAt: at,
      });
      expect(buckets.filter((bucket) => bucket.kind === 'second').length).toBeLessThanOrEqual(10);
      expect(buckets.filter((bucket) => bucket.kind === 'day').length).toBe(1);
    }
  });
});
