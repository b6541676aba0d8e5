import type { PlanName } from '../plans.js';

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

export type AccountEvent =
  | AccountCreated
  | AccountPasswordSet
  | AccountPlanChanged
  | AccountSuspended
  | AccountResumed
  | ApiKeyCreated
  | ApiKeyRevoked;
