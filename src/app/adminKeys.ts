import { randomBytes, timingSafeEqual } from 'node:crypto';
import { type AdminKeyCommand, adminKeyPrefix, adminKeysOwner } from '../domain/account/adminKeys.js';
import { keyNameProblem } from '../domain/account/keyName.js';
import type { KeyState } from '../domain/account/state.js';
import { isRefusal } from '../domain/commands.js';
import { Forbidden, Refused, Unauthorized, Unavailable } from '../domain/errors.js';
import type { ClockShape } from '../ports/Clock.js';
import type { ReadModel } from '../ports/Store.js';
import type { CommitterShape } from './Committer.js';
import { hashKey, keyPattern } from './keyMaterial.js';

/** An admin key's id: `adminkey_` and 96 random bits, as an account key's `key_`. */
const adminKeyIdPattern = /^adminkey_[A-Za-z0-9_-]{16}$/;

/** The admin key as shown once, at creation. */
export type CreatedAdminKey = { readonly id: string; readonly key: string; readonly name: string | null };

/** Who calls the admin API: the admin key (its id names it in the log), and its secret (what idempotent creates
 * derive their ids from: adminIdempotency.ts). The secret is never logged or stored. */
export type AdminPrincipal = { readonly adminKeyId: string; readonly secret: string };

const bearer = /^Bearer +(\S+) *$/i;

/**
 * Resolves the `Authorization` header of an admin call. The key is found by its SHA-256 (no comparison of secrets
 * at all), and the stored hash is then compared with the computed one in constant time. Read afresh on every call
 * (admin calls are few): a revocation by any process counts from the very next call. An account's key is known
 * here and refused (`Forbidden`): it is valid, only not for this API.
 */
export const authenticateAdmin = async (
  reads: ReadModel,
  authorization: string | null | undefined,
): Promise<AdminPrincipal | Unauthorized | Forbidden> => {
  if (authorization === null || authorization === undefined || authorization.trim() === '')
    return new Unauthorized({ message: 'missing Authorization header; send "Authorization: Bearer <admin key>"' });
  const token = bearer.exec(authorization)?.[1];
  if (token === undefined)
    return new Unauthorized({ message: 'malformed Authorization header; expected "Bearer <admin key>"' });
  if (!keyPattern.test(token)) return new Unauthorized({ message: 'invalid admin key' });
  const keyHash = hashKey(token);
  const keyId = await reads.keyIdByHash(keyHash);
  const key = keyId === undefined ? undefined : await reads.key(keyId);
  if (key === undefined || !timingSafeEqual(Buffer.from(key.keyHash, 'hex'), Buffer.from(keyHash, 'hex')))
    return new Unauthorized({ message: 'invalid admin key' });
  if (key.accountId !== adminKeysOwner)
    return new Forbidden({
      message: "an account's API key cannot use the admin API; use an admin key (airs admin-keys create)",
    });
  if (key.revokedAt !== undefined) return new Unauthorized({ message: 'this admin key has been revoked' });
  return { adminKeyId: key.keyId, secret: token };
};

type Deps = { readonly reads: ReadModel; readonly committer: CommitterShape; readonly clock: ClockShape };

/** `airs admin-keys`: create (shown once), list (never the key), revoke. */
export const createAdminKeys = ({ reads, committer, clock }: Deps) => {
  const send = async (command: AdminKeyCommand): Promise<Refused | Unavailable | undefined> => {
    const outcome = await committer.send({ type: 'Account', accountId: adminKeysOwner, command });
    if (outcome instanceof Refused || outcome instanceof Unavailable) return outcome;
    if (isRefusal(outcome)) throw outcome;
    return undefined;
  };
  return {
    async create(name?: string): Promise<CreatedAdminKey | Refused | Unavailable> {
      const trimmed = name?.trim();
      const problem = trimmed === undefined ? undefined : keyNameProblem(trimmed);
      if (problem !== undefined) return new Refused({ message: problem });
      const key = `${adminKeyPrefix}${randomBytes(32).toString('base64url')}`;
      const keyId = `adminkey_${randomBytes(12).toString('base64url')}`;
      const failed = await send({
        type: 'CreateAdminKey',
        keyId,
        keyHash: hashKey(key),
        // `sk_admin_` and 8 characters: enough to tell admin keys apart in a list.
        prefix: key.slice(0, adminKeyPrefix.length + 8),
        name: trimmed,
        now: clock.now(),
      });
      return failed ?? { id: keyId, key, name: trimmed ?? null };
    },
    list: (): Promise<KeyState[]> => reads.keysOf(adminKeysOwner),
    async revoke(keyId: string): Promise<KeyState | Refused | Unavailable> {
      const key = adminKeyIdPattern.test(keyId) ? await reads.key(keyId) : undefined;
      if (key === undefined || key.accountId !== adminKeysOwner)
        return new Refused({ message: `no admin key ${keyId.slice(0, 60)}` });
      const failed = await send({ type: 'RevokeAdminKey', key, now: clock.now() });
      return failed ?? ((await reads.key(keyId)) as KeyState);
    },
  };
};
