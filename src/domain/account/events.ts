import type { PlanName } from '../plans.js';
import type { AccountLimits } from './limits.js';

/** Events of accounts and their API keys. Key material never appears here: only its SHA-256 hash and display prefix. */
export type AccountCreated = {
  readonly type: 'AccountCreated';
  readonly accountId: string;
  readonly email: string;
  readonly plan: PlanName;
  readonly at: number;
};
export type AccountPlanChanged = {
  readonly type: 'AccountPlanChanged';
  readonly accountId: string;
  readonly plan: PlanName;
  readonly at: number;
};
export type AccountSuspended = { readonly type: 'AccountSuspended'; readonly accountId: string; readonly at: number };
export type AccountResumed = { readonly type: 'AccountResumed'; readonly accountId: string; readonly at: number };
export type ApiKeyCreated = {
  readonly type: 'ApiKeyCreated';
  readonly accountId: string;
  readonly keyId: string;
  readonly keyHash: string;
  readonly prefix: string;
  readonly at: number;
};
/** The key's name, shown beside it in the dashboard. Appended in the same decision as `ApiKeyCreated` when the key is
 * created with a name: a separate event because a log record's layout per event type only ever grows by new types
 * (logRecord.ts), so `ApiKeyCreated` keeps its fields and logs written before names existed read as they are. */
export type ApiKeyNamed = {
  readonly type: 'ApiKeyNamed';
  readonly accountId: string;
  readonly keyId: string;
  readonly name: string;
  readonly at: number;
};
/** When the key stops working (it answers `401` from then on, as a revoked key does). Appended in the same decision as
 * `ApiKeyCreated` when the key is created with an expiry: a new type, as `ApiKeyNamed` is. */
export type ApiKeyExpiresAt = {
  readonly type: 'ApiKeyExpiresAt';
  readonly accountId: string;
  readonly keyId: string;
  readonly expiresAt: number;
  readonly at: number;
};
/** The account's own limits as they stand after a change (contract 21), whole: absent keys are the plan's. */
export type AccountLimitsSet = {
  readonly type: 'AccountLimitsSet';
  readonly accountId: string;
  readonly limits: AccountLimits;
  readonly at: number;
};
export type ApiKeyRevoked = {
  readonly type: 'ApiKeyRevoked';
  readonly accountId: string;
  readonly keyId: string;
  readonly at: number;
};

/** The account holder's password was set (at signup, or by the operator). The log says when, never what: the
 * password's scrypt hash is kept beside the log (the store's credentials), like a prompt's text. */
export type AccountPasswordSet = {
  readonly type: 'AccountPasswordSet';
  readonly accountId: string;
  readonly at: number;
};

/** The account holder logged in to the dashboard (or signed up). The log names the session, never its secret: the
 * secret's SHA-256 is kept beside the log (the store's credentials), like the password's hash. */
export type SessionStarted = {
  readonly type: 'SessionStarted';
  readonly accountId: string;
  readonly sessionId: string;
  readonly expiresAt: number;
  readonly at: number;
};
/** The account holder logged out. */
export type SessionEnded = {
  readonly type: 'SessionEnded';
  readonly accountId: string;
  readonly sessionId: string;
  readonly at: number;
};

/** Admin keys' events (adminKeys.ts), kept in the accounts' log. */
export type AdminKeyCreated = {
  readonly type: 'AdminKeyCreated';
  readonly keyId: string;
  readonly keyHash: string;
  readonly prefix: string;
  readonly name?: string | undefined;
  readonly at: number;
};
export type AdminKeyRevoked = { readonly type: 'AdminKeyRevoked'; readonly keyId: string; readonly at: number };
/**
 * An admin key made the change of the events just before it, in the same decision (`action`: the command's type,
 * `CreateAccount`, `ChangePlan`, `Suspend`, `Resume`, `CreateKey`, `RevokeKey`): who changed what, in the log.
 */
export type AdminActed = {
  readonly type: 'AdminActed';
  readonly accountId: string;
  readonly adminKeyId: string;
  readonly action: string;
  readonly at: number;
};
export type AdminEvent = AdminKeyCreated | AdminKeyRevoked | AdminActed;

export type AccountEvent =
  | AccountCreated
  | AccountPasswordSet
  | SessionStarted
  | SessionEnded
  | AccountPlanChanged
  | AccountSuspended
  | AccountResumed
  | ApiKeyCreated
  | ApiKeyNamed
  | ApiKeyExpiresAt
  | ApiKeyRevoked
  | AccountLimitsSet
  | AdminEvent;

/** Account, key, session and admin events: neither a request's, a batch's nor a file's. */
export const isAccountEvent = (event: { type: string }): event is AccountEvent =>
  event.type.startsWith('Account') ||
  event.type.startsWith('ApiKey') ||
  event.type.startsWith('Session') ||
  event.type.startsWith('Admin');
