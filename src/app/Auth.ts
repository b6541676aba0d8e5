import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { AccountLimits, EffectiveLimits } from '../domain/account/limits.js';
import { effectiveLimits } from '../domain/account/limits.js';
import { Forbidden, Unauthorized } from '../domain/errors.js';
import { defaultPlans, type PlanName, type PlanTable } from '../domain/plans.js';
import { createTwoGenerationCache } from '../domain/twoGenerationCache.js';
import { AppClock } from '../ports/Clock.js';
import { type ReadModel, Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { Committer } from './Committer.js';
import { hashKey, keyPattern } from './keyMaterial.js';

/** Who is calling: the account (limits and ownership are per account) and which of its keys was used. `limits`: the
 * limits the account is held to on this call (its plan's in the config in force, overridden by its own), as
 * authentication resolved them; read them with `limitsOf`. */
export type Principal = {
  readonly accountId: string;
  readonly keyId: string;
  readonly plan: PlanName;
  readonly limits?: EffectiveLimits;
};

/** The limits the caller is held to: those authentication resolved, else (a principal made by hand, as tests and
 * internal callers do) its plan's in `plans`. */
export const limitsOf = (plans: PlanTable, principal: Principal): EffectiveLimits =>
  principal.limits ?? effectiveLimits(plans, { plan: principal.plan });

/** What the cache keeps of a key found: enough to check its expiry and resolve its limits on every call. */
type Found = {
  readonly accountId: string;
  readonly keyId: string;
  readonly plan: PlanName;
  readonly own?: AccountLimits | undefined;
  readonly expiresAt?: number | undefined;
  /** The principal last made of it, and the plans it was made under (a reload makes a new table). */
  made?: { readonly plans: PlanTable; readonly principal: Principal };
};

export interface AuthShape {
  /**
   * Resolves the `Authorization` header to a principal, or says why not. A plain promise, not an Effect: it runs on
   * every API call (see docs/decisions.md). A revoke or suspension made by any process applies to the very next call.
   */
  authenticate(authorization: string | null | undefined): Promise<Principal | Unauthorized | Forbidden>;
}

export class Auth extends Context.Service<Auth, AuthShape>()('airs/Auth') {}

const bearer = /^Bearer +(\S+) *$/i;
/** Keys remembered at once; beyond it the oldest is forgotten. Unknown keys are remembered too (a flood of them is
 * bounded by this as well). */
const cacheLimit = 10_000;

/** Looks a key up in the views: key id by hash, the key, its account. */
const lookUp = async (reads: ReadModel, keyHash: string): Promise<Found | Unauthorized | Forbidden> => {
  const keyId = await reads.keyIdByHash(keyHash);
  const key = keyId === undefined ? undefined : await reads.key(keyId);
  if (key === undefined) return new Unauthorized({ message: 'invalid API key' });
  if (key.revokedAt !== undefined) return new Unauthorized({ message: 'this API key has been revoked' });
  const account = await reads.account(key.accountId);
  if (account === undefined) return new Unauthorized({ message: 'invalid API key' });
  if (account.suspended) return new Forbidden({ message: 'this account is suspended; contact the service operator' });
  return {
    accountId: account.accountId,
    keyId: key.keyId,
    plan: account.plan,
    own: account.limits,
    expiresAt: key.expiresAt,
  };
};

const expired = () => new Unauthorized({ message: 'this API key has expired' });

/** The principal of a key found, under the plans in force (made again only after a reload changed them). */
const principalOf = (found: Found, plans: PlanTable): Principal => {
  if (found.made?.plans === plans) return found.made.principal;
  const { accountId, keyId, plan } = found;
  const principal = { accountId, keyId, plan, limits: effectiveLimits(plans, { plan, limits: found.own }) };
  found.made = { plans, principal };
  return principal;
};

/** Where authentication notes the last use of each key (the committer's `keysUsed`), and the clock it reads (also
 * what a key's expiry is compared with). */
export type KeyUsage = { readonly keysUsed: Map<string, number>; readonly now: () => number };

/**
 * Authentication answers from a small cache by key hash. The cache is only as old as the accounts version it was
 * filled under: every account or key event (from this process or the CLI) changes that version in the same commit,
 * and each call reads it from a freshly renewed snapshot first, so a cached answer is never older than the last
 * committed change of any account or key.
 */
export const createAuth = (
  reads: ReadModel,
  usage: KeyUsage = { keysUsed: new Map(), now: Date.now },
  plans: () => PlanTable = () => defaultPlans,
): AuthShape => {
  const cache = createTwoGenerationCache<Found | Unauthorized | Forbidden>(cacheLimit);
  let cachedVersion = -1;
  const { keysUsed, now } = usage;
  return {
    authenticate: async (authorization) => {
      if (authorization === null || authorization === undefined || authorization.trim() === '') {
        return new Unauthorized({ message: 'missing Authorization header; send "Authorization: Bearer <API key>"' });
      }
      const token = bearer.exec(authorization)?.[1];
      if (token === undefined) {
        return new Unauthorized({ message: 'malformed Authorization header; expected "Bearer <API key>"' });
      }
      if (!keyPattern.test(token)) return new Unauthorized({ message: 'invalid API key' });
      // A key revoked or an account suspended by another process a moment ago must already count: the version is read
      // afresh on every call, and the cache holds only answers read under it.
      const version = await reads.accountsVersion();
      // The version only grows; a call that read an older one than another call (their reads interleave) uses no
      // cache at all.
      if (version > cachedVersion) {
        cache.clear();
        cachedVersion = version;
      }
      const keyHash = hashKey(token);
      let answer = version === cachedVersion ? cache.get(keyHash) : undefined;
      if (answer === undefined) {
        answer = await lookUp(reads, keyHash);
        // Cached only if no account or key changed while it was read.
        if (cachedVersion === version) cache.set(keyHash, answer);
      }
      if (!('keyId' in answer)) return answer;
      // A key's expiry is a time, not an event: the cached answer is checked against the clock on every call.
      const at = now();
      if (answer.expiresAt !== undefined && at >= answer.expiresAt) return expired();
      // The key's last use: one Map set; the committer saves it with a batch within a second (Committer.keysUsed).
      keysUsed.set(answer.keyId, at);
      return principalOf(answer, plans());
    },
  };
};

export const AuthLayer = Layer.effect(
  Auth,
  Effect.gen(function* () {
    const { reads } = yield* Store;
    const { keysUsed } = yield* Committer;
    const clock = yield* AppClock;
    // The live config: a reload's plans hold from the next call on.
    const config = yield* AppConfig;
    return Auth.of(createAuth(reads, { keysUsed, now: () => clock.now() }, () => config.plans));
  }),
);
