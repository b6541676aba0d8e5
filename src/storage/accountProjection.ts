/** What an account, key or session event does to the views and their indexes. */
import { adminKeysOwner, evolveAdminKey } from '../domain/account/adminKeys.js';
import type { AccountEvent } from '../domain/account/events.js';
import { evolveAccount, evolveKey, evolveSession } from '../domain/account/state.js';
import type { ViewAccess } from './viewAccess.js';

/** Applies one account or key event to the views and indexes it touches. */
export const projectAccountEvent = (views: ViewAccess, event: AccountEvent): void => {
  // Sessions change no account or key: API key answers cached by `accountsVersion` stay current.
  if (event.type === 'SessionStarted' || event.type === 'SessionEnded') {
    views.putSession(event.sessionId, evolveSession(views.getSession(event.sessionId), event));
    // An account's sessions by [accountId, sessionId]: what a suspension or a new password ends, inside its write.
    if (event.type === 'SessionStarted') views.putIndex('accountSessions', [event.accountId, event.sessionId], '');
    else views.removeIndex('accountSessions', [event.accountId, event.sessionId]);
    return;
  }
  // What an admin key did is read from the log only (airs replay): no view changes.
  if (event.type === 'AdminActed') return;
  views.bumpAccountsVersion();
  if (event.type === 'AdminKeyCreated' || event.type === 'AdminKeyRevoked') {
    const key = evolveAdminKey(views.getKey(event.keyId), event);
    if (key !== undefined) views.putKey(event.keyId, key);
    if (event.type === 'AdminKeyCreated') {
      views.putIndex('keyHashes', event.keyHash, event.keyId);
      views.putIndex('accountKeys', [adminKeysOwner, event.keyId], '');
    }
    return;
  }
  const account = evolveAccount(views.getAccount(event.accountId), event);
  if (account !== undefined) views.putAccount(event.accountId, account);
  if (event.type === 'AccountCreated') views.putIndex('emails', event.email, event.accountId);
  if (
    event.type === 'ApiKeyCreated' ||
    event.type === 'ApiKeyNamed' ||
    event.type === 'ApiKeyExpiresAt' ||
    event.type === 'ApiKeyRevoked'
  ) {
    const key = evolveKey(views.getKey(event.keyId), event);
    if (key !== undefined) views.putKey(event.keyId, key);
  }
  if (event.type === 'ApiKeyCreated') {
    views.putIndex('keyHashes', event.keyHash, event.keyId);
    views.putIndex('accountKeys', [event.accountId, event.keyId], '');
  }
};
