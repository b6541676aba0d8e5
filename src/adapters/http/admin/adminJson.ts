import type { AccountState, KeyState } from '../../../domain/account/state.js';
import type { AdminAccountJson, AdminKeyJson } from './bodies.js';

const seconds = (ms: number) => Math.floor(ms / 1000);

/** An account as the admin API shows it, with its own `limits` (those overriding its plan's). */
export const accountJson = (account: AccountState): AdminAccountJson => ({
  object: 'account',
  id: account.accountId,
  email: account.email,
  plan: account.plan,
  suspended: account.suspended,
  created_at: seconds(account.createdAt),
  active_keys: account.activeKeys,
  limits: account.limits === undefined ? null : { ...account.limits },
});

/** An API key as the admin API shows it: never the key, only its prefix. */
export const keyJson = (key: KeyState): AdminKeyJson => ({
  object: 'api_key',
  id: key.keyId,
  account_id: key.accountId,
  name: key.name ?? null,
  prefix: key.prefix,
  created_at: seconds(key.createdAt),
  revoked_at: key.revokedAt === undefined ? null : seconds(key.revokedAt),
  expires_at: key.expiresAt === undefined ? null : seconds(key.expiresAt),
});
