import type { AccountState, KeyState, SessionState } from '../domain/account/state.js';
import type { IndexKey, ViewAccess } from './projection.js';

/**
 * What `airs replay --verify` finds, on either store: how much of the log it folded, and each difference between the
 * views as stored and as rebuilt from the log. The LMDB verify (adapters/lmdb/verify.ts) and the PostgreSQL one
 * (adapters/postgres/verify.ts) both answer it; the CLI prints it the same way for both.
 */
export type VerifyReport = {
  readonly events: number;
  readonly requests: number;
  readonly accounts: number;
  readonly keys: number;
  /** Batches and files the log leaves (where the store's verification checks them). */
  readonly batches?: number;
  readonly files?: number;
  /** Webhook endpoints (removed ones included) and deliveries the log made. */
  readonly webhookEndpoints?: number;
  readonly webhookDeliveries?: number;
  /** Each difference between stored and rebuilt, in words. Empty when the views match the log. */
  readonly differences: string[];
};

/** A verification names at most this many differences (a damaged store has one per row; the first few tell). */
export const maxDifferences = 50;

/** An index key as text, for messages and for the small account indexes kept in maps. */
export const keyText = (key: IndexKey): string => (Array.isArray(key) ? key.join('\u0001') : String(key));

export type AccountViews = {
  readonly accounts: Map<string, AccountState>;
  readonly keys: Map<string, KeyState>;
  readonly sessions: Map<string, SessionState>;
  readonly indexes: Record<'emails' | 'keyHashes' | 'accountKeys' | 'accountSessions', Map<string, string>>;
  version: number;
};

/** Account and key views rebuilt in maps by the projection the server runs (there are few of them): both stores'
 * verifications fold the log's account events into these and compare them with what is stored. */
export const accountViews = (): { views: ViewAccess; rebuilt: AccountViews } => {
  const rebuilt: AccountViews = {
    accounts: new Map(),
    keys: new Map(),
    sessions: new Map(),
    indexes: { emails: new Map(), keyHashes: new Map(), accountKeys: new Map(), accountSessions: new Map() },
    version: 0,
  };
  const unexpected = () => {
    throw new Error('an account event touched a request view');
  };
  const views: ViewAccess = {
    getRequest: unexpected,
    putRequest: unexpected,
    moveInGroup: unexpected,
    addQueued: unexpected,
    addProcessing: unexpected,
    addAccountCount: unexpected,
    addUsage: unexpected,
    addTokens: unexpected,
    addHourlyUsage: unexpected,
    getBatch: unexpected,
    putBatch: unexpected,
    getFile: unexpected,
    putFile: unexpected,
    getUploads: unexpected,
    putUploads: unexpected,
    getWebhookEndpoint: unexpected,
    putWebhookEndpoint: unexpected,
    getWebhookDelivery: unexpected,
    putWebhookDelivery: unexpected,
    getAccount: (accountId) => rebuilt.accounts.get(accountId),
    putAccount: (accountId, state) => void rebuilt.accounts.set(accountId, state),
    getKey: (keyId) => rebuilt.keys.get(keyId),
    putKey: (keyId, state) => void rebuilt.keys.set(keyId, state),
    putIndex: (index, key, value) =>
      void rebuilt.indexes[index as keyof AccountViews['indexes']].set(keyText(key), value),
    removeIndex: (index, key) => void rebuilt.indexes[index as keyof AccountViews['indexes']].delete(keyText(key)),
    getIndex: (index, key) => rebuilt.indexes[index as keyof AccountViews['indexes']].get(keyText(key)),
    bumpAccountsVersion: () => {
      rebuilt.version++;
    },
    // Credentials are not folded from the log (it holds none of them); they are checked against the accounts below.
    putCredential: () => undefined,
    getSession: (sessionId) => rebuilt.sessions.get(sessionId),
    putSession: (sessionId, state) =>
      void (state === undefined ? rebuilt.sessions.delete(sessionId) : rebuilt.sessions.set(sessionId, state)),
  };
  return { views, rebuilt };
};
