import { describe, expect, it } from 'vitest';
import { adminKeysOwner } from '../../../src/domain/account/adminKeys.js';
import type { Command } from '../../../src/domain/commands.js';
import type { Contract } from '../contract.js';
import { accountId, commitOne, createAccount, replay } from '../fixtures.js';

const createAdminKey = (keyId: string, now = 5): Command => ({
  type: 'Account',
  accountId: adminKeysOwner,
  command: { type: 'CreateAdminKey', keyId, keyHash: `hash_${keyId}`, prefix: 'sk_admin_abcdefgh', name: 'ops', now },
});

/** Admin keys (contract 21): events of the log, kept in the keys view under their own owner, by every store. */
export const adminKeyFeatures = ({ open, pair }: Contract) =>
  describe('admin keys', () => {
    it('keeps an admin key found by its hash and listed apart from every account, and revokes it once', async () => {
      const store = await open();
      await commitOne(store, createAccount(1));
      const versionBefore = await store.reads.accountsVersion();
      await commitOne(store, createAdminKey('adminkey_aaaaaaaaaaaaaaaa'));
      expect(await store.reads.accountsVersion()).toBeGreaterThan(versionBefore);
      expect(await store.reads.keyIdByHash('hash_adminkey_aaaaaaaaaaaaaaaa')).toBe('adminkey_aaaaaaaaaaaaaaaa');
      const listed = await store.reads.keysOf(adminKeysOwner);
      expect(listed).toEqual([
        {
          keyId: 'adminkey_aaaaaaaaaaaaaaaa',
          accountId: adminKeysOwner,
          keyHash: 'hash_adminkey_aaaaaaaaaaaaaaaa',
          prefix: 'sk_admin_abcdefgh',
          name: 'ops',
          createdAt: 5,
        },
      ]);
      expect(await store.reads.keysOf(accountId(1))).toEqual([]);
      expect(await store.reads.account(adminKeysOwner)).toBeUndefined();
      expect((await store.reads.accounts()).map((a) => a.accountId)).toEqual([accountId(1)]);

      const key = listed[0] as NonNullable<(typeof listed)[0]>;
      const revoke: Command = {
        type: 'Account',
        accountId: adminKeysOwner,
        command: { type: 'RevokeAdminKey', key, now: 9 },
      };
      const first = await commitOne(store, revoke);
      const again = await commitOne(store, revoke);
      expect(first !== undefined && 'events' in first ? first.events.map((e) => e.type) : first).toEqual([
        'AdminKeyRevoked',
      ]);
      expect(again !== undefined && 'events' in again ? again.events : again).toEqual([]);
      expect((await store.reads.key('adminkey_aaaaaaaaaaaaaaaa'))?.revokedAt).toBe(9);
    });

    it('logs the admin key that made an account change right after the change, in the same write', async () => {
      const store = await open();
      await commitOne(store, {
        type: 'Account',
        accountId: accountId(1),
        command: { type: 'CreateAccount', accountId: accountId(1), email: 'a@example.com', plan: 'free', now: 3 },
        by: 'adminkey_bbbbbbbbbbbbbbbb',
      });
      const log = await replay(store);
      expect(log.map(({ seq: _, ...event }) => event)).toEqual([
        { type: 'AccountCreated', accountId: accountId(1), email: 'a@example.com', plan: 'free', at: 3 },
        {
          type: 'AdminActed',
          accountId: accountId(1),
          adminKeyId: 'adminkey_bbbbbbbbbbbbbbbb',
          action: 'CreateAccount',
          at: 3,
        },
      ]);
    });

    it('shows a revocation made through one handle to the other at once (its accounts version moved)', async () => {
      const [writer, reader] = await pair();
      await commitOne(writer, createAdminKey('adminkey_cccccccccccccccc'));
      const before = await reader.reads.accountsVersion();
      const key = await reader.reads.key('adminkey_cccccccccccccccc');
      expect(key?.revokedAt).toBeUndefined();
      await commitOne(writer, {
        type: 'Account',
        accountId: adminKeysOwner,
        command: { type: 'RevokeAdminKey', key: key as NonNullable<typeof key>, now: 7 },
      });
      expect(await reader.reads.accountsVersion()).toBeGreaterThan(before);
      expect((await reader.reads.key('adminkey_cccccccccccccccc'))?.revokedAt).toBe(7);
    });
  });
