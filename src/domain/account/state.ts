import type { PlanName } from '../plans.js';
import type { AccountEvent } from './events.js';
import type { AccountLimits } from './limits.js';

export type AccountState = {
  readonly accountId: string;
  readonly email: string;
  readonly plan: PlanName;
  readonly suspended: boolean;
  readonly createdAt: number;
  readonly activeKeys: number;
  /** When a password was last set; absent while the account has none (created by the operator, not signed up). */
  readonly passwordSetAt?: number;
  /** The account's own limits overriding its plan's key by key (absent: its plan's, all of them). */
  readonly limits?: AccountLimits;
};

export type KeyState = {
  readonly keyId: string;
  readonly accountId: string;
  readonly keyHash: string;
  readonly prefix: string;
  readonly createdAt: number;
  /** What the account holder called it (1 to 100 characters, trimmed), if anything. */
  readonly name?: string;
  readonly revokedAt?: number;
  /** When the key stops working (absent: never); readers compare it with the time. */
  readonly expiresAt?: number;
};

/** A dashboard session that has not ended (it may have expired: readers compare `expiresAt` with the time). */
export type SessionState = {
  readonly sessionId: string;
  readonly accountId: string;
  readonly startedAt: number;
  readonly expiresAt: number;
};

/** Fold step of one session: started, then gone once ended. */
export const evolveSession = (state: SessionState | undefined, event: AccountEvent): SessionState | undefined => {
  if (event.type === 'SessionStarted') {
    const { sessionId, accountId, at: startedAt, expiresAt } = event;
    return { sessionId, accountId, startedAt, expiresAt };
  }
  if (event.type === 'SessionEnded') return undefined;
  return state;
};

/** Fold step of an account: its own events and those of its keys. */
export const evolveAccount = (state: AccountState | undefined, event: AccountEvent): AccountState | undefined => {
  if (event.type === 'AccountCreated') {
    return {
      accountId: event.accountId,
      email: event.email,
      plan: event.plan,
      suspended: false,
      createdAt: event.at,
      activeKeys: 0,
    };
  }
  if (state === undefined) return state;
  switch (event.type) {
    case 'AccountPlanChanged':
      return { ...state, plan: event.plan };
    case 'AccountSuspended':
      return { ...state, suspended: true };
    case 'AccountResumed':
      return { ...state, suspended: false };
    case 'AccountPasswordSet':
      return { ...state, passwordSetAt: event.at };
    case 'SessionStarted':
    case 'SessionEnded':
      return state;
    case 'ApiKeyCreated':
      return { ...state, activeKeys: state.activeKeys + 1 };
    case 'ApiKeyNamed':
    case 'ApiKeyExpiresAt':
    case 'AdminKeyCreated':
    case 'AdminKeyRevoked':
    case 'AdminActed':
      return state;
    case 'AccountLimitsSet': {
      if (Object.keys(event.limits).length > 0) return { ...state, limits: event.limits };
      const { limits: _removed, ...rest } = state;
      return rest;
    }
    case 'ApiKeyRevoked':
      return { ...state, activeKeys: state.activeKeys - 1 };
    default: {
      const unknown: never = event;
      return unknown;
    }
  }
};

/** Fold step of one key. */
export const evolveKey = (state: KeyState | undefined, event: AccountEvent): KeyState | undefined => {
  if (event.type === 'ApiKeyCreated') {
    return {
      keyId: event.keyId,
      accountId: event.accountId,
      keyHash: event.keyHash,
      prefix: event.prefix,
      createdAt: event.at,
    };
  }
  if (event.type === 'ApiKeyNamed' && state !== undefined) return { ...state, name: event.name };
  if (event.type === 'ApiKeyExpiresAt' && state !== undefined) return { ...state, expiresAt: event.expiresAt };
  if (event.type === 'ApiKeyRevoked' && state !== undefined) return { ...state, revokedAt: event.at };
  return state;
};
