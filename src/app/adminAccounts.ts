import type { AccountCommand } from '../domain/account/decider.js';
import type { AccountLimitsChange } from '../domain/account/limits.js';
import type { AccountState, KeyState } from '../domain/account/state.js';
import { isRefusal } from '../domain/commands.js';
import { IdempotencyKeyReused, NotFound, Refused, Unavailable } from '../domain/errors.js';
import { couldBeId, emailProblem, idForMessage } from '../domain/identifiers.js';
import type { PlanName, PlanTable } from '../domain/plans.js';
import type { ClockShape } from '../ports/Clock.js';
import type { IdsShape } from '../ports/Ids.js';
import type { ReadModel } from '../ports/Store.js';
import { idempotentAccountId, idempotentApiKey } from './adminIdempotency.js';
import type { AdminPrincipal } from './adminKeys.js';
import type { CommitterShape } from './Committer.js';
import { displayPrefix, hashKey } from './keyMaterial.js';

/** What a create made, and whether it had made it before (the same `Idempotency-Key`): then nothing was written. */
export type Made<A> = { readonly made: A; readonly replayed: boolean };

/** An account key as shown once, at creation. */
export type MadeKey = { readonly key: KeyState; readonly secret: string };

/** A page of accounts, by id: `limit` at most, after the account `after` when given. */
export type AccountPage = { readonly limit: number; readonly after?: string | undefined };

export type AdminError = Refused | NotFound | IdempotencyKeyReused | Unavailable;

export type AdminAccountsDeps = {
  readonly reads: ReadModel;
  readonly committer: CommitterShape;
  readonly clock: ClockShape;
  readonly ids: IdsShape;
  /** Read at each call: a config reload changes them. */
  readonly plans: () => PlanTable;
};

/**
 * The admin API's accounts and keys (product contract 21). Every change is an account command sent with the admin
 * key's id (`by`), so the log names who made it (`AdminActed`, in the same write); each is decided inside the write,
 * as the CLI's are. Creates with an `Idempotency-Key` make what adminIdempotency.ts names.
 */
export const createAdminAccounts = ({ reads, committer, clock, ids, plans }: AdminAccountsDeps) => {
  const send = async (
    accountId: string,
    command: AccountCommand,
    by: AdminPrincipal,
  ): Promise<Refused | Unavailable | undefined> => {
    const outcome = await committer.send({ type: 'Account', accountId, command, by: by.adminKeyId });
    if (outcome instanceof Refused || outcome instanceof Unavailable) return outcome;
    if (isRefusal(outcome)) throw outcome;
    return undefined;
  };

  const account = async (accountId: string): Promise<AccountState | NotFound> =>
    (couldBeId('account', accountId) ? await reads.account(accountId) : undefined) ??
    new NotFound({ message: `no account ${idForMessage(accountId)}` });

  const key = async (keyId: string): Promise<KeyState | undefined> =>
    couldBeId('key', keyId) ? reads.key(keyId) : undefined;

  return {
    account,
    plans,

    /** Accounts by id: a page of them, and whether more follow. */
    async listAccounts(page: AccountPage): Promise<{ data: AccountState[]; hasMore: boolean }> {
      const all = (await reads.accounts()).sort((a, b) => (a.accountId < b.accountId ? -1 : 1));
      const from = page.after === undefined ? all : all.filter((a) => a.accountId > (page.after as string));
      return { data: from.slice(0, page.limit), hasMore: from.length > page.limit };
    },

    async createAccount(
      by: AdminPrincipal,
      body: {
        readonly email: string;
        readonly plan: PlanName;
        readonly limits?: AccountLimitsChange | undefined;
      },
      idempotencyKey?: string,
    ): Promise<Made<AccountState> | AdminError> {
      const email = body.email.trim().toLowerCase();
      const problem = emailProblem(email);
      if (problem !== undefined) return new Refused({ message: problem });
      const accountId = idempotencyKey === undefined ? ids.accountId() : idempotentAccountId(by.secret, idempotencyKey);
      const earlier = idempotencyKey === undefined ? undefined : await reads.account(accountId);
      if (earlier === undefined) {
        const now = clock.now();
        const failed = await send(accountId, { type: 'CreateAccount', accountId, email, plan: body.plan, now }, by);
        if (failed === undefined) {
          // The limits are a command of their own (named in the log as well); a refusal of them leaves the account.
          const limitsFailed =
            body.limits === undefined
              ? undefined
              : await send(accountId, { type: 'SetLimits', limits: body.limits, now }, by);
          if (limitsFailed !== undefined) return limitsFailed;
          return { made: (await reads.account(accountId)) as AccountState, replayed: false };
        }
        // Another call with the same key may have made it in the meantime: answered as a repeat below.
        if (idempotencyKey === undefined || failed instanceof Unavailable) return failed;
        const madeMeanwhile = await reads.account(accountId);
        if (madeMeanwhile === undefined) return failed;
        return repeated(madeMeanwhile, email);
      }
      return repeated(earlier, email);
    },

    /** Changes the plan, the limits, then the suspension, as asked (each a command of its own, each named in the log). */
    async patchAccount(
      by: AdminPrincipal,
      accountId: string,
      body: {
        readonly plan?: PlanName | undefined;
        readonly limits?: AccountLimitsChange | undefined;
        readonly suspended?: boolean | undefined;
      },
    ): Promise<AccountState | AdminError> {
      const found = await account(accountId);
      if (found instanceof NotFound) return found;
      const now = clock.now();
      if (body.plan !== undefined) {
        const failed = await send(accountId, { type: 'ChangePlan', plan: body.plan, now }, by);
        if (failed !== undefined) return failed;
      }
      if (body.limits !== undefined) {
        const failed = await send(accountId, { type: 'SetLimits', limits: body.limits, now }, by);
        if (failed !== undefined) return failed;
      }
      if (body.suspended !== undefined) {
        const command: AccountCommand = body.suspended ? { type: 'Suspend', now } : { type: 'Resume', now };
        const failed = await send(accountId, command, by);
        if (failed !== undefined) return failed;
      }
      return (await reads.account(accountId)) as AccountState;
    },

    async createKey(
      by: AdminPrincipal,
      accountId: string,
      body: { readonly name?: string | undefined; readonly expiresAt?: number | undefined },
      idempotencyKey?: string,
    ): Promise<Made<MadeKey> | AdminError> {
      const found = await account(accountId);
      if (found instanceof NotFound) return found;
      const name = body.name?.trim();
      const made =
        idempotencyKey === undefined
          ? { keyId: ids.keyId(), key: ids.apiKey() }
          : idempotentApiKey(by.secret, accountId, idempotencyKey);
      const again = async (): Promise<Made<MadeKey> | undefined | IdempotencyKeyReused> => {
        const earlier = idempotencyKey === undefined ? undefined : await reads.key(made.keyId);
        if (earlier === undefined) return undefined;
        if (
          earlier.accountId !== accountId ||
          earlier.keyHash !== hashKey(made.key) ||
          earlier.name !== name ||
          earlier.expiresAt !== body.expiresAt
        )
          return reusedKey();
        return { made: { key: earlier, secret: made.key }, replayed: true };
      };
      const before = await again();
      if (before !== undefined) return before;
      const failed = await send(
        accountId,
        {
          type: 'CreateKey',
          keyId: made.keyId,
          keyHash: hashKey(made.key),
          prefix: displayPrefix(made.key),
          plans: plans(),
          now: clock.now(),
          ...(name === undefined ? {} : { name }),
          ...(body.expiresAt === undefined ? {} : { expiresAt: body.expiresAt }),
        },
        by,
      );
      if (failed === undefined)
        return { made: { key: (await reads.key(made.keyId)) as KeyState, secret: made.key }, replayed: false };
      if (failed instanceof Unavailable) return failed;
      return (await again()) ?? failed;
    },

    async listKeys(accountId: string): Promise<KeyState[] | NotFound> {
      const found = await account(accountId);
      return found instanceof NotFound ? found : reads.keysOf(accountId);
    },

    /** Revokes an account's key at once (idempotent: a revoked key stays revoked). */
    async revokeKey(by: AdminPrincipal, keyId: string): Promise<KeyState | AdminError> {
      const found = await key(keyId);
      if (found === undefined) return new NotFound({ message: `no key ${idForMessage(keyId)}` });
      const failed = await send(found.accountId, { type: 'RevokeKey', key: found, now: clock.now() }, by);
      return failed ?? ((await reads.key(keyId)) as KeyState);
    },
  };
};

const reusedKey = () =>
  new IdempotencyKeyReused({
    message: 'Idempotency-Key was already used with a different body; use a new key for a new create',
  });

/** A create repeated with its idempotency key: the same account if the body asked for the same one. */
const repeated = (earlier: AccountState, email: string): Made<AccountState> | IdempotencyKeyReused =>
  earlier.email === email ? { made: earlier, replayed: true } : reusedKey();

export type AdminAccounts = ReturnType<typeof createAdminAccounts>;
