import { describe, expect, it } from 'vitest';
import type { ThrottleAsk } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { oneToN } from '../fixtures.js';

const max = 5;
const windowMs = 15 * 60_000;
const loginAt = (now: number, ...keys: string[]): ThrottleAsk => ({ scope: 'login', keys, max, windowMs, now });

/**
 * The login and signup throttles' counts are the store's (decided inside its writes), so that an attacker who spreads
 * password guesses over several servers gets no more guesses than on one.
 */
export const throttleFeatures = ({ open, pair, itWith, factory }: Contract) =>
  describe('throttled tries', () => {
    it('lets `max` tries per key through in a window, refuses the next until the oldest leaves it, then lets one again', async () => {
      const store = await open();
      for (const i of oneToN(max)) expect(await store.throttle.reserve(loginAt(1_000 + i, 'email:a'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(2_000, 'email:a'))).toEqual({
        retryAfterMs: 1_001 + windowMs - 2_000,
      });
      // Another key is untouched.
      expect(await store.throttle.reserve(loginAt(2_000, 'email:b'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(1_001 + windowMs, 'email:a'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(1_001 + windowMs, 'email:a'))).toEqual({ retryAfterMs: 1 });
    });

    it('takes a place under every key of a try or under none: a full address takes no place under a new email', async () => {
      const store = await open();
      for (const i of oneToN(max))
        expect(await store.throttle.reserve(loginAt(1_000, `email:${i}`, 'address:198.51.100.7'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(1_500, 'email:new', 'address:198.51.100.7'))).toEqual({
        retryAfterMs: 1_000 + windowMs - 1_500,
      });
      // The refused try took nothing under its email: that email still has all its places.
      for (const _ of oneToN(max)) expect(await store.throttle.reserve(loginAt(1_600, 'email:new'))).toBeUndefined();
    });

    it('gives a released place back, forgets a key it is told to forget (and only it), and keeps scopes apart', async () => {
      const store = await open();
      for (const _ of oneToN(max))
        expect(await store.throttle.reserve(loginAt(1_000, 'email:a', 'address:x'))).toBeUndefined();
      await store.throttle.release({ scope: 'login', keys: ['email:a', 'address:x'], at: 1_000, windowMs });
      expect(await store.throttle.reserve(loginAt(1_100, 'email:a', 'address:x'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(1_200, 'email:a'))).toEqual({
        retryAfterMs: 1_000 + windowMs - 1_200,
      });
      await store.throttle.forget('login', 'email:a');
      expect(await store.throttle.reserve(loginAt(1_300, 'email:a'))).toBeUndefined();
      expect(await store.throttle.reserve(loginAt(1_300, 'address:x'))).toEqual({
        retryAfterMs: 1_000 + windowMs - 1_300,
      });
      // Another scope's key of the same name counts apart.
      expect(await store.throttle.reserve({ ...loginAt(1_300, 'address:x'), scope: 'signup' })).toBeUndefined();
    });

    it('lets exactly `max` through of tries at one key sent at once through two handles', async () => {
      const [first, second] = await pair();
      const answers = await Promise.all(
        oneToN(20).map((i) => (i % 2 === 0 ? first : second).throttle.reserve(loginAt(5_000, 'email:raced'))),
      );
      expect(answers.filter((answer) => answer === undefined)).toHaveLength(max);
    });

    itWith(
      factory.anotherProcess,
      'lets exactly `max` through of tries at one key sent at once by this process and another',
      async (anotherProcess) => {
        const store = await open();
        const other = await anotherProcess(store);
        const answers = await Promise.all(
          oneToN(40).map((i) =>
            i % 2 === 0
              ? store.throttle.reserve({ ...loginAt(5_000, 'address:raced'), max: 12 })
              : other.reserveThrottlePlace({ ...loginAt(5_000, 'address:raced'), max: 12 }),
          ),
        );
        expect(answers.filter((answer) => answer === undefined)).toHaveLength(12);
      },
    );
  });
