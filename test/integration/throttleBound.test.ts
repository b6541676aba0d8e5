import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { openLimits } from '../../src/adapters/lmdb/limits.js';
import { tempDataDir } from '../support/testApp.js';

const windowMs = 60_000;
const ask = (key: string, now: number) => ({ scope: 'login', keys: [key], max: 5, windowMs, now });

describe('The LMDB store keeps the throttles’ keys bounded on disk', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it('drops keys whose tries have all left their window as later tries come', async () => {
    const dir = tempDataDir('airs-throttle-prune');
    dirs.push(dir);
    const limits = openLimits(dir);
    for (let i = 0; i < 100; i += 1) await limits.throttle.reserve(ask(`email:${i}@example.com`, 1_000));
    expect(limits.throttleKeyCount()).toBe(100);
    // Each try drops a few of the keys that left their window: about seven tries later, all of them.
    for (let i = 0; i < 10; i += 1) await limits.throttle.reserve(ask('address:203.0.113.9', 1_001 + windowMs + i));
    expect(limits.throttleKeyCount()).toBe(1);
    await limits.close();
  });

  it('keeps no more than its bound of keys under a spray of new ones, dropping those that leave their window first', async () => {
    const dir = tempDataDir('airs-throttle-cap');
    dirs.push(dir);
    const limits = openLimits(dir, { maxThrottleKeys: 50 });
    for (let i = 0; i < 500; i += 1) await limits.throttle.reserve(ask(`email:${i}@example.com`, 1_000 + i));
    expect(limits.throttleKeyCount()).toBeLessThanOrEqual(51);
    // The newest keys are those kept: the latest email still counts its try.
    for (let i = 0; i < 4; i += 1)
      expect(await limits.throttle.reserve(ask('email:499@example.com', 2_000))).toBeUndefined();
    expect(await limits.throttle.reserve(ask('email:499@example.com', 2_000))).toEqual({
      retryAfterMs: 1_499 + windowMs - 2_000,
    });
    await limits.close();
  });
});
