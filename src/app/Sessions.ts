import { hash, randomBytes, timingSafeEqual } from 'node:crypto';
import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import * as Result from 'effect/Result';
import type { AccountCommand } from '../domain/account/decider.js';
import { isRefusal, passwordCredentialKey, sessionCredentialKey } from '../domain/commands.js';
import { Refused } from '../domain/errors.js';
import { controlCharacters, emailProblem, maxEmailLength } from '../domain/identifiers.js';
import { AppClock } from '../ports/Clock.js';
import { Store } from '../ports/Store.js';
import { Accounts } from './Accounts.js';
import { AppConfig } from './AppConfig.js';
import { Committer } from './Committer.js';
import { type HashingBusy, isHashingBusy, PasswordHashing } from './PasswordHashing.js';
import { hashPassword, passwordProblem } from './passwords.js';
import { createThrottle, loginLimits, signupLimits, type Throttled } from './throttle.js';

export type { HashingBusy } from './PasswordHashing.js';
export type { Throttled } from './throttle.js';

/** How long a dashboard session lasts after login. */
export const sessionLifetimeMs = 7 * 24 * 3_600_000;

/** A session as its holder has it: the cookie's value is `token`, shown to nobody else and stored nowhere. */
export type StartedSession = {
  readonly accountId: string;
  readonly sessionId: string;
  readonly token: string;
  readonly expiresAt: number;
};
export type LoggedIn = { readonly accountId: string; readonly sessionId: string };

export interface SessionsShape {
  /**
   * Creates a free-plan account with this password and logs it in. Throttled per client address
   * (`dashboard.signupsPerHour`); busy when every password-hashing slot and queue place is taken.
   */
  signup(
    email: string,
    password: string,
    clientAddress: string,
  ): Promise<StartedSession | Refused | Throttled | HashingBusy>;
  /**
   * Checks the password and starts a session. At most 5 failures per email and per client address in 15 minutes are
   * ever checked, however many arrive at once: each try takes its place in the throttle before its hash runs.
   */
  login(
    email: string,
    password: string,
    clientAddress: string,
  ): Promise<StartedSession | Refused | Throttled | HashingBusy>;
  /** The session a cookie's token names, if it is live (started, not ended, not expired, its account not suspended). */
  current(token: string | undefined): Promise<LoggedIn | undefined>;
  /** Ends the session a token names (nothing if it names none). */
  logout(token: string | undefined): Promise<void>;
}

export class Sessions extends Context.Service<Sessions, SessionsShape>()('airs/Sessions') {}

const secretHashOf = (secret: string) => hash('sha256', secret, 'base64url');
/** `sess_` + 16 random bytes, then the secret: 32 random bytes. Anything much longer names no session. */
const tokenPattern = /^(sess_[A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/;
/** The same answer for an unknown email and a wrong password: nobody learns which emails have accounts. */
const wrongLogin = () => new Refused({ message: 'that email and password do not match an account' });

export const SessionsLayer = Layer.effect(
  Sessions,
  Effect.gen(function* () {
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const accounts = yield* Accounts;
    const config = yield* AppConfig;
    const hashing = yield* PasswordHashing;
    const logins = createThrottle(store.throttle, clock, 'login', loginLimits);
    const { signupsPerHour } = config.dashboard;
    const signups =
      signupsPerHour === 0 ? undefined : createThrottle(store.throttle, clock, 'signup', signupLimits(signupsPerHour));
    // An unknown email is checked against this hash, so that it takes as long as a wrong password: the time of an
    // answer does not tell which emails have accounts.
    const decoy = hashPassword(randomBytes(16).toString('base64url'));

    const send = async (accountId: string, command: AccountCommand): Promise<Refused | undefined> => {
      const outcome = await committer.send({ type: 'Account', accountId, command });
      if (outcome instanceof Refused) return outcome;
      if (isRefusal(outcome)) throw outcome;
      return undefined;
    };

    /** Starts a session for an account whose password hash `checkedPasswordHash` was just matched. The write refuses
     * it if the account is suspended or its password changed since (the CLI may act meanwhile). */
    const start = async (accountId: string, checkedPasswordHash: string): Promise<StartedSession | Refused> => {
      const sessionId = `sess_${randomBytes(16).toString('base64url')}`;
      const secret = randomBytes(32).toString('base64url');
      const expiresAt = clock.now() + sessionLifetimeMs;
      const refused = await send(accountId, {
        type: 'StartSession',
        sessionId,
        secretHash: secretHashOf(secret),
        expiresAt,
        checkedPasswordHash,
        now: clock.now(),
      });
      return refused ?? { accountId, sessionId, token: `${sessionId}.${secret}`, expiresAt };
    };

    const current: SessionsShape['current'] = async (token) => {
      const parts = token === undefined ? null : tokenPattern.exec(token);
      if (parts === null) return undefined;
      const [, sessionId, secret] = parts as unknown as [string, string, string];
      const session = await store.reads.session(sessionId);
      if (session === undefined || session.expiresAt <= clock.now()) return undefined;
      const stored = await store.reads.credential(sessionCredentialKey(sessionId));
      const given = Buffer.from(secretHashOf(secret));
      if (stored === undefined || stored.length !== given.length || !timingSafeEqual(Buffer.from(stored), given))
        return undefined;
      // A suspension ends an account's sessions in its own write; this also covers sessions an older version left.
      if ((await store.reads.account(session.accountId))?.suspended !== false) return undefined;
      return { accountId: session.accountId, sessionId };
    };

    return Sessions.of({
      signup: async (email, password, clientAddress) => {
        // What costs nothing is checked first: a refused email or password leaves no account and takes no place.
        const normalized = email.trim().toLowerCase();
        const problem = emailProblem(normalized) ?? passwordProblem(password);
        if (problem !== undefined) return new Refused({ message: problem });
        if ((await store.reads.accountIdByEmail(normalized)) !== undefined)
          return new Refused({ message: `an account with email ${normalized} already exists` });
        const place = await signups?.reserve([`address:${clientAddress}`]);
        if (place !== undefined && 'throttled' in place) return place;
        const passwordHash = await hashing.hash(password);
        if (isHashingBusy(passwordHash)) {
          await place?.release();
          return passwordHash;
        }
        const created = await Effect.runPromise(Effect.result(accounts.createAccount(normalized, 'free')));
        if (Result.isFailure(created)) return created.failure;
        const { accountId } = created.success;
        const refused = await send(accountId, { type: 'SetPassword', passwordHash, now: clock.now() });
        return refused ?? start(accountId, passwordHash);
      },
      login: async (email, password, clientAddress) => {
        // Cut to the longest email there can be: the throttle keeps its keys, and a form may send 16 KB.
        const normalized = email
          .trim()
          .toLowerCase()
          .slice(0, maxEmailLength + 1);
        // No account has an email with control characters (signup and the decider refuse them): such an email is
        // never looked up (PostgreSQL refuses NUL in text), and is answered as an unknown email is, after the same
        // decoy hash, so neither its answer nor its time differs (contract 18). It is throttled as any email is (the
        // stores keep throttle keys of any text).
        const lookable = normalized.length <= maxEmailLength && !controlCharacters.test(normalized);
        const emailKey = `email:${normalized}`;
        // The try takes its place before the hash runs and keeps it unless the password is right.
        const place = await logins.reserve([emailKey, `address:${clientAddress}`]);
        if ('throttled' in place) return place;
        const accountId = lookable ? await store.reads.accountIdByEmail(normalized) : undefined;
        const stored =
          accountId === undefined ? undefined : await store.reads.credential(passwordCredentialKey(accountId));
        const matches = await hashing.verify(password, stored ?? (await decoy));
        if (isHashingBusy(matches)) {
          await place.release();
          return matches;
        }
        if (accountId === undefined || stored === undefined || !matches) return wrongLogin();
        // A right password clears the email's failures; the address keeps its own (one good login must not unlock a
        // spray), and this try is not one of them.
        await place.forget(emailKey);
        await place.release();
        return start(accountId, stored);
      },
      current,
      logout: async (token) => {
        const session = await current(token);
        if (session === undefined) return;
        await send(session.accountId, { type: 'EndSession', sessionId: session.sessionId, now: clock.now() });
      },
    });
  }),
);
