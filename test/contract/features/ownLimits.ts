import { describe, expect, it } from 'vitest';
import type { AccountLimitsChange } from '../../../src/domain/account/limits.js';
import type { Command } from '../../../src/domain/commands.js';
import { Refused } from '../../../src/domain/errors.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import type { StoreShape } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import { accountId, ask, commitOne, createAccount, eventsOf, oneToN, queueOf, replay, submit } from '../fixtures.js';

const setLimits = (account: number, limits: AccountLimitsChange, now = 10): Command => ({
  type: 'Account',
  accountId: accountId(account),
  command: { type: 'SetLimits', limits, now },
});

const keyExpiring = (account: number, keyId: string, expiresAt: number, now = 20): Command => ({
  type: 'Account',
  accountId: accountId(account),
  command: {
    type: 'CreateKey',
    keyId,
    keyHash: `hash_${keyId}`,
    prefix: keyId.slice(0, 8),
    expiresAt,
    plans: defaultPlans,
    now,
  },
});

const submitsOf = (account: number, count: number): Command[] =>
  oneToN(count).map((n) => submit(`req_${account}_${String(n).padStart(2, '0')}`, { account, now: 1_000 + n }));

const accountsOf = async (store: StoreShape, started: readonly { reqId: string }[]) =>
  Promise.all(started.map(async ({ reqId }) => (await store.reads.request(reqId))?.context.accountId));

/**
 * Contract 21: an account's own limits (`AccountLimitsSet`) and a key's expiry (`ApiKeyExpiresAt`) are events of the
 * log, kept in the account's and the key's views by every store, read back by another handle and by a replay of the
 * log; and the claim holds an account's own `maxProcessing` over its plan's, exactly, in the store's write.
 */
export const ownLimitFeatures = ({ pair }: Contract) =>
  describe("an account's own limits and a key's expiry", () => {
    it("keeps an account's own limits, changed key by key, with null removing an override, in the log and the view", async () => {
      const [first, second] = await pair();
      await commitOne(first, createAccount(1));
      const set = await commitOne(first, setLimits(1, { submitsPerMinute: 7, allowedModels: ['echo'], maxKeys: 4 }));
      expect(eventsOf(set).map((event) => event.type)).toEqual(['AccountLimitsSet']);
      expect((await second.reads.account(accountId(1)))?.limits).toEqual({
        submitsPerMinute: 7,
        allowedModels: ['echo'],
        maxKeys: 4,
      });
      await commitOne(first, setLimits(1, { maxKeys: null, tokensPerDay: 1_000 }, 11));
      expect((await second.reads.account(accountId(1)))?.limits).toEqual({
        submitsPerMinute: 7,
        allowedModels: ['echo'],
        tokensPerDay: 1_000,
      });
      // The same limits again change nothing: no event.
      expect(eventsOf(await commitOne(first, setLimits(1, { submitsPerMinute: 7 }, 12)))).toEqual([]);
      // Every override removed: the account has no limits of its own.
      await commitOne(first, setLimits(1, { submitsPerMinute: null, allowedModels: null, tokensPerDay: null }, 13));
      expect((await second.reads.account(accountId(1)))?.limits).toBeUndefined();
      const logged = (await replay(second)).filter((event) => event.type === 'AccountLimitsSet');
      expect(logged.map((event) => (event as { limits: unknown }).limits)).toEqual([
        { submitsPerMinute: 7, allowedModels: ['echo'], maxKeys: 4 },
        { submitsPerMinute: 7, allowedModels: ['echo'], tokensPerDay: 1_000 },
        {},
      ]);
    });

    it("keeps a key's expiry in the key's view and the log, and refuses an expiry already past", async () => {
      const [first, second] = await pair();
      await commitOne(first, createAccount(1));
      const created = await commitOne(first, keyExpiring(1, 'key_expiring', 5_000));
      expect(eventsOf(created).map((event) => event.type)).toEqual(['ApiKeyCreated', 'ApiKeyExpiresAt']);
      expect((await second.reads.key('key_expiring'))?.expiresAt).toBe(5_000);
      expect((await replay(second)).find((event) => event.type === 'ApiKeyExpiresAt')).toMatchObject({
        keyId: 'key_expiring',
        expiresAt: 5_000,
      });
      const past = await first.commit({ commands: [keyExpiring(1, 'key_past', 20, 20)] });
      expect(past[0]).toBeInstanceOf(Refused);
      expect(await second.reads.key('key_past')).toBeUndefined();
    });

    it("starts no more of an account's requests than its own maxProcessing, above or below its plan's", async () => {
      const [first, second] = await pair();
      await first.commit({ commands: [createAccount(1), createAccount(2), ...submitsOf(1, 6), ...submitsOf(2, 6)] });
      // Plan bound 4 for both (the free plan, as the claim is told); account 1's own is 1, account 2's own is 5.
      await commitOne(first, setLimits(1, { maxProcessing: 1 }));
      await commitOne(first, setLimits(2, { maxProcessing: 5 }));
      const bounds = { maxProcessing: { free: 4 } };
      const a = await queueOf(first).claim(ask('A', 2_000, { max: 20, ...bounds }));
      const b = await queueOf(second).claim(ask('B', 2_000, { max: 20, ...bounds }));
      const accounts = await accountsOf(first, [...a.started, ...b.started]);
      expect(accounts.filter((id) => id === accountId(1))).toHaveLength(1);
      expect(accounts.filter((id) => id === accountId(2))).toHaveLength(5);
      // The override removed: the plan's bound holds again.
      await commitOne(first, setLimits(1, { maxProcessing: null }, 20));
      const c = await queueOf(second).claim(ask('B', 2_100, { max: 20, ...bounds }));
      expect(await accountsOf(first, c.started)).toEqual([accountId(1), accountId(1), accountId(1)]);
    });
  });
