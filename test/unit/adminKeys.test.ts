import { describe, expect, it } from 'vitest';
import { idempotentAccountId, idempotentApiKey } from '../../src/app/adminIdempotency.js';
import { adminKeysOwner, decideAdminKey, evolveAdminKey } from '../../src/domain/account/adminKeys.js';
import { Refused } from '../../src/domain/errors.js';
import { couldBeId } from '../../src/domain/identifiers.js';

const created = {
  type: 'CreateAdminKey',
  keyId: 'adminkey_a',
  keyHash: 'h',
  prefix: 'sk_admin_abcdefgh',
  now: 1,
} as const;

describe('admin keys in the domain', () => {
  it('creates an admin key owned by no account, refuses a bad name, and revokes it once', () => {
    const events = decideAdminKey({ ...created, name: 'ops' });
    expect(events).toEqual([
      { type: 'AdminKeyCreated', keyId: 'adminkey_a', keyHash: 'h', prefix: 'sk_admin_abcdefgh', name: 'ops', at: 1 },
    ]);
    expect(decideAdminKey({ ...created, name: ' padded ' })).toBeInstanceOf(Refused);
    const key = evolveAdminKey(undefined, (events as never[])[0] as never);
    expect(key).toMatchObject({ keyId: 'adminkey_a', accountId: adminKeysOwner, name: 'ops', createdAt: 1 });
    const revoke = { type: 'RevokeAdminKey', key: key as NonNullable<typeof key>, now: 2 } as const;
    expect(decideAdminKey(revoke)).toEqual([{ type: 'AdminKeyRevoked', keyId: 'adminkey_a', at: 2 }]);
    const revoked = evolveAdminKey(key, { type: 'AdminKeyRevoked', keyId: 'adminkey_a', at: 2 });
    expect(decideAdminKey({ ...revoke, key: revoked as NonNullable<typeof revoked> })).toEqual([]);
  });

  it('refuses to revoke an account key as an admin key', () => {
    const accountKey = { keyId: 'key_x', accountId: 'acct_x', keyHash: 'h', prefix: 'sk_x', createdAt: 1 };
    expect(decideAdminKey({ type: 'RevokeAdminKey', key: accountKey, now: 2 })).toBeInstanceOf(Refused);
  });
});

describe('idempotent creates of the admin API', () => {
  it('name the same account and key for the same admin key and idempotency key, and others for any other', () => {
    const account = idempotentAccountId('sk_admin_one', 'team-a');
    expect(couldBeId('account', account)).toBe(true);
    expect(idempotentAccountId('sk_admin_one', 'team-a')).toBe(account);
    expect(idempotentAccountId('sk_admin_one', 'team-b')).not.toBe(account);
    expect(idempotentAccountId('sk_admin_two', 'team-a')).not.toBe(account);
    const key = idempotentApiKey('sk_admin_one', account, 'k');
    expect(couldBeId('key', key.keyId)).toBe(true);
    expect(key.key).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(idempotentApiKey('sk_admin_one', account, 'k')).toEqual(key);
    expect(idempotentApiKey('sk_admin_two', account, 'k').key).not.toBe(key.key);
    expect(idempotentApiKey('sk_admin_one', 'acct_other0000000', 'k').key).not.toBe(key.key);
  });
});
