import { Refused } from '../errors.js';
import type { AdminEvent } from './events.js';
import { keyNameProblem } from './keyName.js';
import type { KeyState } from './state.js';

/**
 * Admin keys (product contract 21): the operator's keys for `/v1/admin/*`, made and revoked with `airs admin-keys`.
 * They are kept in the keys view beside account keys, owned by `adminKeysOwner`, which names no account: the key
 * hash index then finds both kinds with one lookup, an admin key used on any other route finds no account and is an
 * invalid API key, and their changes bump the accounts version, so a revocation reaches every process's caches at once.
 */
export const adminKeysOwner = 'admin';

/** The prefix of an admin key's secret (`sk_admin_…`): it still has the form of an API key (keyMaterial.ts). */
export const adminKeyPrefix = 'sk_admin_';

export type AdminKeyCommand =
  | {
      readonly type: 'CreateAdminKey';
      readonly keyId: string;
      readonly keyHash: string;
      readonly prefix: string;
      /** Trimmed by the caller; checked as an account key's name is. */
      readonly name?: string | undefined;
      readonly now: number;
    }
  /** `key`: the key as the write finds it (read inside the write). */
  | { readonly type: 'RevokeAdminKey'; readonly key: KeyState; readonly now: number };

export const isAdminKeyCommand = (command: { type: string }): command is AdminKeyCommand =>
  command.type === 'CreateAdminKey' || command.type === 'RevokeAdminKey';

/** Decides an admin key command. Revoking a revoked key succeeds with no events, as an account key's does. */
export const decideAdminKey = (command: AdminKeyCommand): readonly AdminEvent[] | Refused => {
  if (command.type === 'CreateAdminKey') {
    const { keyId, keyHash, prefix, name, now: at } = command;
    const problem = name === undefined ? undefined : keyNameProblem(name);
    if (problem !== undefined) return new Refused({ message: problem });
    return [{ type: 'AdminKeyCreated', keyId, keyHash, prefix, ...(name === undefined ? {} : { name }), at }];
  }
  if (command.key.accountId !== adminKeysOwner)
    return new Refused({ message: `${command.key.keyId} is an account's key, not an admin key` });
  return command.key.revokedAt === undefined
    ? [{ type: 'AdminKeyRevoked', keyId: command.key.keyId, at: command.now }]
    : [];
};

/** Fold step of an admin key, as it is kept in the keys view. */
export const evolveAdminKey = (state: KeyState | undefined, event: AdminEvent): KeyState | undefined => {
  if (event.type === 'AdminKeyCreated') {
    const { keyId, keyHash, prefix, name, at: createdAt } = event;
    return { keyId, accountId: adminKeysOwner, keyHash, prefix, createdAt, ...(name === undefined ? {} : { name }) };
  }
  if (event.type === 'AdminKeyRevoked' && state !== undefined) return { ...state, revokedAt: event.at };
  return state;
};
