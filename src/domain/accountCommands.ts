/** An account's commands decided in the write, and where its credentials are kept beside the log. */
import { decideAccount } from './account/decider.js';
import type { AccountEvent } from './account/events.js';
import type { Command, Decision, DecisionReads, Refusal } from './commandTypes.js';
import { Refused } from './errors.js';

/** Where an account's password hash is kept among the store's credentials. */
export const passwordCredentialKey = (accountId: string) => `password:${accountId}`;
/** Where a session's secret hash is kept among the store's credentials. */
export const sessionCredentialKey = (sessionId: string) => `session:${sessionId}`;

/** An account's command, decided against the facts the write holds (emails, keys, sessions, its password). */
export const decideAccountCommand = (
  reads: DecisionReads,
  { accountId, command, by }: Extract<Command, { type: 'Account' }>,
): Decision | Refusal => {
  // Facts other than the account itself are read here, inside the write, so that two concurrent writers (the server
  // and the CLI) cannot both take the same email or revoke from a stale copy of a key.
  if (command.type === 'CreateAccount' && reads.accountIdByEmail(command.email) !== undefined) {
    return new Refused({ message: `an account with email ${command.email} already exists` });
  }
  // Key ids are random; one taken already (by any account, or an admin key) is refused rather than overwritten.
  if ((command.type === 'CreateKey' || command.type === 'CreateAdminKey') && reads.key(command.keyId) !== undefined) {
    return new Refused({ message: `a key with id ${command.keyId} already exists` });
  }
  let current = command;
  if (command.type === 'RevokeKey' || command.type === 'RevokeAdminKey') {
    const key = reads.key(command.key.keyId);
    if (key === undefined) return new Refused({ message: `no key ${command.key.keyId}` });
    current = { ...command, key };
  }
  if (command.type === 'EndSession') current = { ...command, session: reads.session(command.sessionId) };
  // A suspension or a new password ends the account's sessions: those that exist as the write finds them, so that
  // a login committed a moment before (by the server, while the CLI suspends) is ended too.
  if (command.type === 'Suspend' || command.type === 'SetPassword')
    current = { ...command, sessions: reads.sessionsOf(accountId) };
  if (command.type === 'StartSession')
    current = { ...command, passwordHashNow: reads.credential(passwordCredentialKey(accountId)) };
  const decided = decideAccount(reads.account(accountId), current);
  if (decided instanceof Refused) return decided;
  const events: readonly AccountEvent[] =
    by === undefined || decided.length === 0
      ? decided
      : [...decided, { type: 'AdminActed', accountId, adminKeyId: by, action: command.type, at: command.now }];
  const credentials: { key: string; value: string | undefined }[] = [];
  if (current.type === 'SetPassword')
    credentials.push({ key: passwordCredentialKey(accountId), value: current.passwordHash });
  if (current.type === 'StartSession')
    credentials.push({ key: sessionCredentialKey(current.sessionId), value: current.secretHash });
  for (const event of events)
    if (event.type === 'SessionEnded')
      credentials.push({ key: sessionCredentialKey(event.sessionId), value: undefined });
  return credentials.length === 0 ? { events } : { events, credentials };
};
