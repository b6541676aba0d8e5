import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { AccountCommand } from '../domain/account/decider.js';
import { keyNameProblem } from '../domain/account/keyName.js';
import type { AccountLimitsChange } from '../domain/account/limits.js';
import type { AccountState, KeyState } from '../domain/account/state.js';
import { isRefusal } from '../domain/commands.js';
import { Refused } from '../domain/errors.js';
import { couldBeId, emailProblem, idForMessage } from '../domain/identifiers.js';
import { isPlanName, type PlanName } from '../domain/plans.js';
import { AppClock } from '../ports/Clock.js';
import { Ids } from '../ports/Ids.js';
import { Store } from '../ports/Store.js';
import { AppConfig } from './AppConfig.js';
import { Committer } from './Committer.js';
import { displayPrefix, hashKey } from './keyMaterial.js';
import { PasswordHashing } from './PasswordHashing.js';
import { passwordProblem } from './passwords.js';

/** A key as shown once, at creation: the only moment the secret exists outside the caller's hands. */
export type CreatedKey = {
  readonly id: string;
  readonly key: string;
  readonly prefix: string;
  readonly account_id: string;
  readonly name?: string;
  /** When the key stops working, in ms since the epoch (absent: never). */
  readonly expiresAt?: number;
};

export interface AccountsShape {
  createAccount(email: string, plan: PlanName): Effect.Effect<AccountState, Refused>;
  listAccounts(): Effect.Effect<AccountState[]>;
  changePlan(accountId: string, plan: PlanName): Effect.Effect<AccountState, Refused>;
  suspend(accountId: string): Effect.Effect<AccountState, Refused>;
  resume(accountId: string): Effect.Effect<AccountState, Refused>;
  /** Creates a key, named if `name` is given (trimmed here; 1 to 100 characters, no control characters), ending at
   * `expiresAt` (ms since the epoch; refused unless in the future) if given. */
  createKey(accountId: string, name?: string, expiresAt?: number): Effect.Effect<CreatedKey, Refused>;
  /** Changes the account's own limits key by key (`null` removes an override; see accountLimitsChangeSchema). */
  setLimits(accountId: string, limits: AccountLimitsChange): Effect.Effect<AccountState, Refused>;
  listKeys(accountId: string): Effect.Effect<KeyState[], Refused>;
  revokeKey(keyId: string): Effect.Effect<KeyState, Refused>;
  /** Sets the account holder's password (at least 12 characters); only its scrypt hash is kept, beside the log. */
  setPassword(accountId: string, password: string): Effect.Effect<AccountState, Refused>;
}

export class Accounts extends Context.Service<Accounts, AccountsShape>()('airs/Accounts') {}

export const AccountsLayer = Layer.effect(
  Accounts,
  Effect.gen(function* () {
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    const config = yield* AppConfig;
    const hashing = yield* PasswordHashing;

    /** Sends an account command to the committer (decided inside the write, so concurrent CLI runs cannot both take
     * the last key slot or the same email) and, once it is durable, answers from the views. */
    const run = <A>(accountId: string, command: AccountCommand, result: () => Promise<A> | A) =>
      Effect.flatMap(
        Effect.promise(() => committer.send({ type: 'Account', accountId, command })),
        (outcome): Effect.Effect<A, Refused> => {
          if (outcome instanceof Refused) return Effect.fail(outcome);
          if (isRefusal(outcome)) return Effect.die(outcome);
          return Effect.promise(async () => result());
        },
      );

    const existing = (accountId: string) => async () => (await store.reads.account(accountId)) as AccountState;

    const withAccount = (accountId: string) =>
      Effect.flatMap(
        Effect.promise(async () => (couldBeId('account', accountId) ? store.reads.account(accountId) : undefined)),
        (account) =>
          account === undefined
            ? Effect.fail(new Refused({ message: `no account ${idForMessage(accountId)}` }))
            : Effect.succeed(account),
      );

    const accountCommand = (accountId: string, make: (now: number) => AccountCommand) =>
      Effect.flatMap(withAccount(accountId), () => run(accountId, make(clock.now()), existing(accountId)));

    /** A plan the config in force does not define is refused (a typo would otherwise hold the account to `free`). */
    const unknownPlan = (plan: PlanName) =>
      isPlanName(config.plans, plan)
        ? undefined
        : new Refused({ message: `unknown plan "${plan}"; plans are ${Object.keys(config.plans).join(', ')}` });

    return Accounts.of({
      createAccount: (email, plan) => {
        const noPlan = unknownPlan(plan);
        if (noPlan !== undefined) return Effect.fail(noPlan);
        const normalized = email.trim().toLowerCase();
        const problem = emailProblem(normalized);
        if (problem !== undefined) return Effect.fail(new Refused({ message: problem }));
        const accountId = ids.accountId();
        return run(
          accountId,
          { type: 'CreateAccount', accountId, email: normalized, plan, now: clock.now() },
          existing(accountId),
        );
      },
      listAccounts: () => Effect.promise(() => store.reads.accounts()),
      changePlan: (accountId, plan) => {
        const noPlan = unknownPlan(plan);
        if (noPlan !== undefined) return Effect.fail(noPlan);
        return accountCommand(accountId, (now) => ({ type: 'ChangePlan', plan, now }));
      },
      setLimits: (accountId, limits) => accountCommand(accountId, (now) => ({ type: 'SetLimits', limits, now })),
      suspend: (accountId) => accountCommand(accountId, (now) => ({ type: 'Suspend', now })),
      resume: (accountId) => accountCommand(accountId, (now) => ({ type: 'Resume', now })),
      createKey: (accountId, name, expiresAt) =>
        Effect.flatMap(withAccount(accountId), () => {
          const trimmed = name?.trim();
          const problem = trimmed === undefined ? undefined : keyNameProblem(trimmed);
          if (problem !== undefined) return Effect.fail(new Refused({ message: problem }));
          const key = ids.apiKey();
          const keyId = ids.keyId();
          const prefix = displayPrefix(key);
          return run(
            accountId,
            {
              type: 'CreateKey',
              keyId,
              keyHash: hashKey(key),
              prefix,
              plans: config.plans,
              now: clock.now(),
              ...(trimmed === undefined ? {} : { name: trimmed }),
              ...(expiresAt === undefined ? {} : { expiresAt }),
            },
            () => ({
              id: keyId,
              key,
              prefix,
              account_id: accountId,
              ...(trimmed === undefined ? {} : { name: trimmed }),
              ...(expiresAt === undefined ? {} : { expiresAt }),
            }),
          );
        }),
      setPassword: (accountId, password) => {
        const problem = passwordProblem(password);
        if (problem !== undefined) return Effect.fail(new Refused({ message: problem }));
        return Effect.flatMap(withAccount(accountId), () =>
          Effect.flatMap(
            // The operator's command waits for its turn at the hashing gate, however busy (never refused).
            Effect.promise(() => hashing.hashInTurn(password)),
            (passwordHash) =>
              run(accountId, { type: 'SetPassword', passwordHash, now: clock.now() }, existing(accountId)),
          ),
        );
      },
      listKeys: (accountId) =>
        Effect.flatMap(withAccount(accountId), () => Effect.promise(() => store.reads.keysOf(accountId))),
      revokeKey: (keyId) =>
        Effect.flatMap(
          Effect.promise(async () => (couldBeId('key', keyId) ? store.reads.key(keyId) : undefined)),
          (key) => {
            if (key === undefined) return Effect.fail(new Refused({ message: `no key ${idForMessage(keyId)}` }));
            return run(
              key.accountId,
              { type: 'RevokeKey', key, now: clock.now() },
              async () => (await store.reads.key(keyId)) as KeyState,
            );
          },
        ),
    });
  }),
);
