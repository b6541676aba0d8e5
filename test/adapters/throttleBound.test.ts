import { rmSync } from 'node:fs';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openLimits } from '../../src/adapters/lmdb/limits.js';
import { openMemoryStore } from '../../src/adapters/memory/MemoryStore.js';
import { sql } from '../../src/adapters/postgres/db.js';
import { openPostgresStore } from '../../src/adapters/postgres/PostgresStore.js';
import type { ThrottleCounter } from '../../src/ports/Store.js';
import { throttlePrunePerReserve } from '../../src/storage/throttleCounts.js';
import { stopTestCluster, testCluster } from '../support/postgres.js';
import { tempDataDir } from '../support/testApp.js';

const windowMs = 60_000;
const max = 5;
const ask = (key: string, now: number) => ({ scope: 'login', keys: [key], max, windowMs, now });

/** A store's throttle counter under a bound of its keys, and those keys counted the store's own way. */
type Opened = { readonly throttle: ThrottleCounter; readonly keyCount: () => Promise<number>; close(): Promise<void> };

const cleanUps: (() => Promise<void>)[] = [];
const stores: Record<'memory' | 'LMDB' | 'PostgreSQL', (maxKeys: number) => Promise<Opened>> = {
  memory: async (maxKeys) => {
    const store = openMemoryStore({ maxThrottleKeys: maxKeys });
    return { throttle: store.throttle, keyCount: async () => store.throttleKeyCount(), close: store.close };
  },
  LMDB: async (maxKeys) => {
    const dir = tempDataDir('airs-throttle-bound');
    cleanUps.push(async () => rmSync(dir, { recursive: true, force: true }));
    const limits = openLimits(dir, { maxThrottleKeys: maxKeys });
    return { throttle: limits.throttle, keyCount: async () => limits.throttleKeyCount(), close: limits.close };
  },
  // The bound looked at on every reservation (by default every 256th: counting costs PostgreSQL a scan).
  PostgreSQL: async (maxKeys) => {
    const store = await openPostgresStore(await (await testCluster()).createDatabase(), {
      maxConnections: 2,
      throttleBounds: { maxKeys, checkEvery: 1 },
    });
    return {
      throttle: store.throttle,
      keyCount: async () => Number((await store.db.query(sql`SELECT count(*) AS n FROM attempts`))[0]?.n),
      close: store.close,
    };
  },
};

afterAll(() => stopTestCluster());

describe.each(Object.entries(stores))('The %s store prunes the throttles’ keys by the one rule', (_, open) => {
  let opened: Opened | undefined;
  const openStore = async (maxKeys: number) => {
    opened = await open(maxKeys);
    return opened;
  };
  afterEach(async () => {
    await opened?.close();
    opened = undefined;
    for (const cleanUp of cleanUps.splice(0)) await cleanUp();
  });

  it('drops sixteen keys whose tries have all left their window per later try, until none is left', async () => {
    const { throttle, keyCount } = await openStore(1_000);
    for (let i = 0; i < 100; i += 1) await throttle.reserve(ask(`email:${i}@example.com`, 1_000));
    expect(await keyCount()).toBe(100);
    const counts = [];
    for (let i = 0; i < 8; i += 1) {
      await throttle.reserve(ask('address:203.0.113.9', 1_001 + windowMs + i));
      counts.push(await keyCount());
    }
    // Each try drops sixteen (the address's own key is added by the first and kept).
    expect(throttlePrunePerReserve).toBe(16);
    expect(counts).toEqual([85, 69, 53, 37, 21, 5, 1, 1]);
  });

  it('keeps no more than its bound and the try’s own key under a spray of new keys, dropping those that leave their window first', async () => {
    const { throttle, keyCount } = await openStore(50);
    for (let i = 0; i < 500; i += 1) await throttle.reserve(ask(`email:${i}@example.com`, 1_000 + i));
    expect(await keyCount()).toBe(51);
    // The newest keys are those kept: the latest email still counts its try.
    for (let i = 0; i < max - 1; i += 1)
      expect(await throttle.reserve(ask('email:499@example.com', 2_000))).toBeUndefined();
    expect(await throttle.reserve(ask('email:499@example.com', 2_000))).toEqual({
      retryAfterMs: 1_499 + windowMs - 2_000,
    });
    // The oldest was dropped: its one try is forgotten, so it has all its places again.
    for (let i = 0; i < max; i += 1) expect(await throttle.reserve(ask('email:0@example.com', 2_000))).toBeUndefined();
    expect(await throttle.reserve(ask('email:0@example.com', 2_000))).toBeDefined();
    // Once back at the bound, tries at kept keys drop nothing more.
    expect(await keyCount()).toBe(50);
  });

  it('never drops a key a try counts under, even when it is the soonest to leave its window and the store is over its bound', async () => {
    const { throttle, keyCount } = await openStore(50);
    for (let i = 0; i < max; i += 1) expect(await throttle.reserve(ask('email:victim', 1_000))).toBeUndefined();
    for (let i = 1; i <= 50; i += 1) await throttle.reserve(ask(`email:${i}@example.com`, 1_000 + i));
    expect(await keyCount()).toBe(51);
    // Over the bound, with the victim's key the soonest to leave: the victim's (refused) try drops another key,
    // not its own, so its tries still count at the next.
    const refused = { retryAfterMs: 1_000 + windowMs - 1_100 };
    expect(await throttle.reserve(ask('email:victim', 1_100))).toEqual(refused);
    expect(await keyCount()).toBe(50);
    expect(await throttle.reserve(ask('email:victim', 1_100))).toEqual(refused);
  });
});
