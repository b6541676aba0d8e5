import { Context, Effect, Layer } from 'effect';
import { Forbidden, Unauthorized } from '../domain/errors.js';
import type { PlanName } from '../domain/plans.js';
import { Store } from '../ports/Store.js';
import { hashKey, keyPattern } from './keyMaterial.js';

/** Who is calling: the account (limits and ownership are per account) and which of its keys was used. */
export type Principal = { readonly accountId: string; readonly keyId: string; readonly plan: PlanName };

export interface AuthShape {
  /** Resolves the `Authorization` header to a principal. Reads the committed views on every call, so a revoke or
   * suspension made by any process applies to the very next request. */
  authenticate(authorization: string | null | undefined): Effect.Effect<Principal, Unauthorized | Forbidden>;
}

export class Auth extends Context.Service<Auth, AuthShape>()('airs/Auth') {}

const bearer = /^Bearer +(\S+) *$/i;

export const AuthLayer = Layer.effect(
  Auth,
  Effect.gen(function* () {
    const { reads } = yield* Store;
    const authenticate = (authorization: string | null | undefined) => {
      if (authorization === null || authorization === undefined || authorization.trim() === '') {
        return Effect.fail(
          new Unauthorized({ message: 'missing Authorization header; send "Authorization: Bearer <API key>"' }),
        );
      }
      const token = bearer.exec(authorization)?.[1];
      if (token === undefined) {
        return Effect.fail(
          new Unauthorized({ message: 'malformed Authorization header; expected "Bearer <API key>"' }),
        );
      }
      if (!keyPattern.test(token)) return Effect.fail(new Unauthorized({ message: 'invalid API key' }));
      // A key revoked or an account suspended by another process a moment ago must already count.
      reads.refresh();
      const keyId = reads.keyIdByHash(hashKey(token));
      const key = keyId === undefined ? undefined : reads.key(keyId);
      if (key === undefined) return Effect.fail(new Unauthorized({ message: 'invalid API key' }));
      if (key.revokedAt !== undefined)
        return Effect.fail(new Unauthorized({ message: 'this API key has been revoked' }));
      const account = reads.account(key.accountId);
      if (account === undefined) return Effect.fail(new Unauthorized({ message: 'invalid API key' }));
      if (account.suspended) {
        return Effect.fail(new Forbidden({ message: 'this account is suspended; contact the service operator' }));
      }
      return Effect.succeed({ accountId: account.accountId, keyId: key.keyId, plan: account.plan });
    };
    return Auth.of({ authenticate });
  }),
);
