import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import { createAuth } from '../../../src/app/Auth.js';
import { createCommitter, defaultCommitterLimits } from '../../../src/app/Committer.js';
import { hashKey } from '../../../src/app/keyMaterial.js';
import type { Command } from '../../../src/domain/commands.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import type { Batch, StoreShape } from '../../../src/ports/Store.js';
import { submit } from '../../support/submit.js';
import { eventually, startTestApp, tempDataDir } from '../../support/testApp.js';

const key = `sk_${'a'.repeat(43)}`;
const otherKey = `sk_${'b'.repeat(43)}`;
const setUpAccount: Command[] = [
  {
    type: 'Account',
    accountId: 'acct_1',
    command: { type: 'CreateAccount', accountId: 'acct_1', email: 'used@example.com', plan: 'scale', now: 1 },
  },
  ...[key, otherKey].map(
    (k, i): Command => ({
      type: 'Account',
      accountId: 'acct_1',
      command: {
        type: 'CreateKey',
        keyId: `key_${i + 1}`,
        keyHash: hashKey(k),
        prefix: k.slice(0, 11),
        plans: defaultPlans,
        now: 2,
      },
    }),
  ),
];

describe("A key's last use (kept in memory, saved with the committer's batches) in the LMDB store", () => {
  let lmdb: LmdbStore;
  let dir: string;
  afterEach(async () => {
    vi.useRealTimers();
    await lmdb.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** With `simulatedIntervals`, the committer's flush interval runs in simulated time (`vi.advanceTimersByTimeAsync`);
   * the store's own timers and every other timer stay real. */
  const setUp = async (flushMs: number, options: { readonly simulatedIntervals?: boolean } = {}) => {
    dir = tempDataDir('airs-key-use');
    lmdb = openLmdbStore(dir);
    if (options.simulatedIntervals === true) vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const batches: Batch[] = [];
    const counting: StoreShape = {
      ...lmdb,
      commit: (batch) => {
        batches.push(batch);
        return lmdb.commit(batch);
      },
    };
    const committer = createCommitter(counting, { ...defaultCommitterLimits, keyUseFlushMs: flushMs });
    await Promise.all(setUpAccount.map((command) => committer.send(command)));
    let now = 10_000;
    const auth = createAuth(lmdb.reads, { keysUsed: committer.keysUsed, now: () => now });
    return {
      batches,
      committer,
      auth,
      setNow: (time: number) => {
        now = time;
      },
    };
  };

  it('costs no commit per call: a thousand calls are one saved value once the interval passes', async () => {
    const { batches, committer, auth, setNow } = await setUp(50, { simulatedIntervals: true });
    const before = batches.length;
    for (let i = 0; i < 1_000; i++) {
      setNow(10_000 + i);
      expect(await auth.authenticate(`Bearer ${key}`)).toMatchObject({ keyId: 'key_1' });
    }
    await vi.advanceTimersByTimeAsync(49);
    await committer.drain();
    expect(batches.length).toBe(before);
    expect(lmdb.syncReads.keyLastUsed('key_1')).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await committer.drain();
    expect(batches.slice(before)).toEqual([{ commands: [], keyUses: [{ keyId: 'key_1', at: 10_999 }] }]);
    lmdb.syncReads.refresh();
    expect(lmdb.syncReads.keyLastUsed('key_1')).toBe(10_999);
    expect(lmdb.syncReads.keyLastUsed('key_2')).toBeUndefined();
    // Nothing used since: the next intervals pass without a commit.
    await vi.advanceTimersByTimeAsync(150);
    await committer.drain();
    expect(batches.length).toBe(before + 1);
    await committer.stop();
  });

  it('rides on the batches of commands, at most once per key and interval', async () => {
    const flushMs = 200;
    const { batches, committer, auth, setNow } = await setUp(flushMs, { simulatedIntervals: true });
    const before = batches.length;
    let simulatedMs = 0;
    // Calls and commands through two intervals, 10 simulated ms apart: the uses go out with the batches that follow
    // each interval's end.
    for (let round = 0; round < 40; round++) {
      setNow(20_000 + round);
      await auth.authenticate(`Bearer ${key}`);
      if (round % 2 === 0) await auth.authenticate(`Bearer ${otherKey}`);
      await committer.send({
        type: 'Account',
        accountId: 'acct_1',
        command: { type: 'ChangePlan', plan: round % 2 === 0 ? 'starter' : 'scale', now: 3 },
      });
      await vi.advanceTimersByTimeAsync(10);
      simulatedMs += 10;
    }
    await committer.drain();
    const intervals = Math.floor(simulatedMs / flushMs);
    expect(intervals).toBe(2);
    const withUses = batches.slice(before).filter((batch) => (batch.keyUses ?? []).length > 0);
    // Forty batches of commands, and key uses in one batch per interval that passed, each key once in it.
    expect(batches.length - before).toBeGreaterThanOrEqual(40);
    expect(withUses).toHaveLength(intervals);
    for (const batch of withUses)
      expect((batch.keyUses ?? []).map((use) => use.keyId).sort()).toEqual(['key_1', 'key_2']);
    await committer.stop();
    expect(verifyViews(lmdb.databases).differences).toEqual([]);
  });

  it('is not set by a call that fails authentication', async () => {
    const { committer, auth } = await setUp(50);
    expect(await auth.authenticate(`Bearer sk_${'z'.repeat(43)}`)).not.toHaveProperty('keyId');
    expect(await auth.authenticate('Bearer nonsense')).not.toHaveProperty('keyId');
    await committer.send({
      type: 'Account',
      accountId: 'acct_1',
      command: { type: 'RevokeKey', key: lmdb.syncReads.key('key_2') as never, now: 5 },
    });
    lmdb.syncReads.refresh();
    expect(await auth.authenticate(`Bearer ${otherKey}`)).not.toHaveProperty('keyId');
    expect(committer.keysUsed.size).toBe(0);
    await committer.stop();
  });

  it('is saved at stop and survives a restart', async () => {
    const { committer, auth } = await setUp(60_000);
    await auth.authenticate(`Bearer ${key}`);
    await committer.stop();
    await lmdb.close();
    lmdb = openLmdbStore(dir);
    expect(lmdb.syncReads.keyLastUsed('key_1')).toBe(10_000);
  });
});

describe('The running app', () => {
  it('saves the last use of the key an API call authenticated with, readable after a restart of LMDB', async () => {
    const app = await startTestApp({
      store: 'lmdb',
      committerLimits: { ...defaultCommitterLimits, keyUseFlushMs: 50 },
    });
    const { key: apiKey, keyId } = await app.account();
    expect(await app.store.reads.keyLastUsed(keyId)).toBeUndefined();
    await submit(app, apiKey, { prompt: 'hi' });
    const usedAt = app.clock.now();
    // Saved by the committer's next flush, 50 ms on.
    await eventually(async () => ((await app.store.reads.keyLastUsed(keyId)) === usedAt ? true : undefined));
    await app.stop({ keepData: true });
    const reopened = openLmdbStore(app.dataDir);
    try {
      expect(await reopened.reads.keyLastUsed(keyId)).toBe(usedAt);
    } finally {
      await reopened.close();
      rmSync(app.dataDir, { recursive: true, force: true });
    }
  });
});
