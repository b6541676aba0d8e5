import { Refused } from '../errors.js';
import { emailProblem } from '../identifiers.js';
import type { PlanName, PlanTable } from '../plans.js';
import { type AdminKeyCommand, decideAdminKey, isAdminKeyCommand } from './adminKeys.js';
import type { AccountEvent } from './events.js';
import { keyNameProblem } from './keyName.js';
import { type AccountLimitsChange, changeLimits, effectiveLimits, sameLimits } from './limits.js';
import type { AccountState, KeyState, SessionState } from './state.js';

export type AccountCommand =
  | AdminKeyCommand
  | {
      readonly type: 'CreateAccount';
      readonly accountId: string;
      readonly email: string;
      readonly plan: PlanName;
      readonly now: number;
    }
  | { readonly type: 'ChangePlan'; readonly plan: PlanName; readonly now: number }
  /** `sessions`: the account's sessions not ended, read inside the write; a suspension ends them all. */
  | { readonly type: 'Suspend'; readonly sessions?: readonly string[]; readonly now: number }
  | { readonly type: 'Resume'; readonly now: number }
  | {
      readonly type: 'CreateKey';
      readonly keyId: string;
      readonly keyHash: string;
      readonly prefix: string;
      /** Trimmed by the caller; refused unless `keyNameProblem` finds nothing wrong with it. */
      readonly name?: string | undefined;
      /** When the key stops working (absent: never); refused unless after `now`. */
      readonly expiresAt?: number | undefined;
      readonly plans: PlanTable;
      readonly now: number;
    }
  | { readonly type: 'RevokeKey'; readonly key: KeyState; readonly now: number }
  /** Changes the account's own limits key by key (a key set to `null` is removed: the plan's holds again). */
  | { readonly type: 'SetLimits'; readonly limits: AccountLimitsChange; readonly now: number }
  /**
   * The hash travels with the command to the store's credentials; the event carries none of it. A new password ends
   * the account's other sessions (`sessions`, read inside the write): all of them, unless `keepSessionId` names the
   * one the account holder changed it from.
   */
  | {
      readonly type: 'SetPassword';
      readonly passwordHash: string;
      readonly keepSessionId?: string;
      readonly sessions?: readonly string[];
      readonly now: number;
    }
  /**
   * The secret's hash travels to the store's credentials; the event names the session only. `checkedPasswordHash` is
   * the password hash the login was checked against and `passwordHashNow` the account's hash as the write finds it:
   * a password changed in between (by the operator, from another process) refuses the session.
   */
  | {
      readonly type: 'StartSession';
      readonly sessionId: string;
      readonly secretHash: string;
      readonly expiresAt: number;
      readonly checkedPasswordHash: string;
      readonly passwordHashNow?: string | undefined;
      readonly now: number;
    }
  /** `session` is the session as the store has it (read inside the write), absent once ended. */
  | { readonly type: 'EndSession'; readonly sessionId: string; readonly session?: SessionState; readonly now: number };

const endSessions = (accountId: string, sessions: readonly string[] | undefined, at: number): AccountEvent[] =>
  (sessions ?? []).map((sessionId) => ({ type: 'SessionEnded', accountId, sessionId, at }));

/**
 * Decides an account command against the account's state. Asking for what already holds (suspend a suspended
 * account, revoke a revoked key) succeeds with no events, so scripts may repeat themselves safely.
 */
export const decideAccount = (
  account: AccountState | undefined,
  command: AccountCommand,
): readonly AccountEvent[] | Refused => {
  if (isAdminKeyCommand(command)) return decideAdminKey(command);
  if (command.type === 'CreateAccount') {
    if (account !== undefined) return new Refused({ message: `account ${command.accountId} already exists` });
    const problem = emailProblem(command.email);
    if (problem !== undefined) return new Refused({ message: problem });
    const { accountId, email, plan, now: at } = command;
    return [{ type: 'AccountCreated', accountId, email, plan, at }];
  }
  if (account === undefined) return new Refused({ message: 'no such account' });
  const { accountId } = account;
  const at = command.now;
  switch (command.type) {
    case 'ChangePlan':
      return account.plan === command.plan ? [] : [{ type: 'AccountPlanChanged', accountId, plan: command.plan, at }];
    case 'Suspend':
      // Also when already suspended: sessions left open by an older version end now.
      return [
        ...(account.suspended ? [] : [{ type: 'AccountSuspended', accountId, at } as const]),
        ...endSessions(accountId, command.sessions, at),
      ];
    case 'Resume':
      return account.suspended ? [{ type: 'AccountResumed', accountId, at }] : [];
    case 'CreateKey': {
      if (account.suspended)
        return new Refused({ message: `account ${accountId} is suspended: no API key can be created for it` });
      const limits = effectiveLimits(command.plans, account);
      const { maxKeys } = limits;
      if (maxKeys !== null && account.activeKeys >= maxKeys) {
        const whose = limits.own.includes('maxKeys')
          ? `account ${accountId}'s own limits allow`
          : `the ${account.plan} plan allows`;
        return new Refused({
          message: `${whose} ${maxKeys} active API key${maxKeys === 1 ? '' : 's'} and account ${accountId} has ${account.activeKeys}; revoke one or move to a larger plan`,
        });
      }
      const { keyId, keyHash, prefix, name, expiresAt } = command;
      if (expiresAt !== undefined && !(Number.isSafeInteger(expiresAt) && expiresAt > at))
        return new Refused({ message: 'a key must expire in the future: its expiry is already past' });
      const events: AccountEvent[] = [{ type: 'ApiKeyCreated', accountId, keyId, keyHash, prefix, at }];
      if (name !== undefined) {
        const problem = keyNameProblem(name);
        if (problem !== undefined) return new Refused({ message: problem });
        events.push({ type: 'ApiKeyNamed', accountId, keyId, name, at });
      }
      if (expiresAt !== undefined) events.push({ type: 'ApiKeyExpiresAt', accountId, keyId, expiresAt, at });
      return events;
    }
    case 'SetLimits': {
      const next = changeLimits(account.limits, command.limits);
      return sameLimits(account.limits, next) ? [] : [{ type: 'AccountLimitsSet', accountId, limits: next ?? {}, at }];
    }
    case 'SetPassword': {
      const others = command.sessions?.filter((sessionId) => sessionId !== command.keepSessionId);
      return [{ type: 'AccountPasswordSet', accountId, at }, ...endSessions(accountId, others, at)];
    }
    case 'StartSession':
      if (account.suspended) return new Refused({ message: 'this account is suspended; contact the service operator' });
      if (command.passwordHashNow !== command.checkedPasswordHash)
        return new Refused({ message: 'the password was changed while logging in; log in with the new password' });
      return [{ type: 'SessionStarted', accountId, sessionId: command.sessionId, expiresAt: command.expiresAt, at }];
    case 'EndSession':
      if (command.session === undefined) return [];
      if (command.session.accountId !== accountId)
        return new Refused({ message: 'session belongs to another account' });
      return [{ type: 'SessionEnded', accountId, sessionId: command.sessionId, at }];
    case 'RevokeKey':
      if (command.key.accountId !== accountId) return new Refused({ message: 'key belongs to another account' });
      return command.key.revokedAt === undefined
        ? [{ type: 'ApiKeyRevoked', accountId, keyId: command.key.keyId, at }]
        : [];
    default: {
      const unknown: never = command;
      return unknown;
    }
  }
};
