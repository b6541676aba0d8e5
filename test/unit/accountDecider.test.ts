import { describe, expect, it } from 'vitest';
import { type AccountCommand, decideAccount } from '../../src/domain/account/decider.js';
import type { AccountEvent } from '../../src/domain/account/events.js';
import { type AccountState, evolveAccount, evolveKey, type KeyState } from '../../src/domain/account/state.js';
import { Refused } from '../../src/domain/errors.js';
import { defaultPlans, type PlanName } from '../../src/domain/plans.js';

const accountId = 'acct_a';
const fold = (events: AccountEvent[]) => events.reduce<AccountState | undefined>(evolveAccount, undefined);
const created = (plan: PlanName = 'free'): AccountEvent => ({
  type: 'AccountCreated',
  accountId,
  email: 'a@example.com',
  plan,
  at: 1,
});
const keyCreated = (keyId: string): AccountEvent => ({
  type: 'ApiKeyCreated',
  accountId,
  keyId,
  keyHash: `h-${keyId}`,
  prefix: 'sk_abc',
  at: 2,
});
const createKey = (keyId: string): AccountCommand => ({
  type: 'CreateKey',
  keyId,
  keyHash: `h-${keyId}`,
  prefix: 'sk_abc',
  plans: defaultPlans,
  now: 2,
});

describe('When the account does not exist', () => {
  it('creating it records the account on the chosen plan', () => {
    expect(
      decideAccount(undefined, { type: 'CreateAccount', accountId, email: 'a@example.com', plan: 'free', now: 1 }),
    ).toEqual([created()]);
  });
  it('every other command is refused', () => {
    expect(decideAccount(undefined, createKey('k1'))).toBeInstanceOf(Refused);
    expect(decideAccount(undefined, { type: 'Suspend', now: 1 })).toBeInstanceOf(Refused);
  });
});

describe('When the account exists', () => {
  it('creating it again is refused', () => {
    expect(
      decideAccount(fold([created()]), {
        type: 'CreateAccount',
        accountId,
        email: 'a@example.com',
        plan: 'free',
        now: 1,
      }),
    ).toBeInstanceOf(Refused);
  });
  it.each([
    ['free', 1],
    ['starter', 3],
    ['scale', 10],
  ] as const)('the %s plan allows exactly %i active keys', (plan, max) => {
    const events = [created(plan)];
    for (let i = 0; i < max; i++) {
      const decision = decideAccount(fold(events), createKey(`k${i}`));
      expect(decision).toEqual([keyCreated(`k${i}`)]);
      events.push(keyCreated(`k${i}`));
    }
    const refused = decideAccount(fold(events), createKey('one-more'));
    expect(refused).toBeInstanceOf(Refused);
    expect((refused as Refused).message).toContain(`the ${plan} plan allows ${max} active API key`);
  });
  it('the enterprise plan has no key limit', () => {
    const events = [created('enterprise')];
    for (let i = 0; i < 50; i++) events.push(keyCreated(`k${i}`));
    expect(decideAccount(fold(events), createKey('k50'))).toEqual([keyCreated('k50')]);
  });
  it('revoked keys do not count against the limit', () => {
    const events = [created(), keyCreated('k1'), { type: 'ApiKeyRevoked', accountId, keyId: 'k1', at: 3 } as const];
    expect(decideAccount(fold(events), createKey('k2'))).toEqual([keyCreated('k2')]);
  });
  it('revoking a key records it once; revoking it again changes nothing', () => {
    const key = evolveKey(undefined, keyCreated('k1')) as KeyState;
    const account = fold([created(), keyCreated('k1')]);
    expect(decideAccount(account, { type: 'RevokeKey', key, now: 5 })).toEqual([
      { type: 'ApiKeyRevoked', accountId, keyId: 'k1', at: 5 },
    ]);
    const revoked = evolveKey(key, { type: 'ApiKeyRevoked', accountId, keyId: 'k1', at: 5 }) as KeyState;
    expect(decideAccount(account, { type: 'RevokeKey', key: revoked, now: 6 })).toEqual([]);
  });
  it('suspending and resuming toggle the account, and repeating either changes nothing', () => {
    const account = fold([created()]);
    expect(decideAccount(account, { type: 'Resume', now: 3 })).toEqual([]);
    expect(decideAccount(account, { type: 'Suspend', now: 3 })).toEqual([
      { type: 'AccountSuspended', accountId, at: 3 },
    ]);
    const suspended = fold([created(), { type: 'AccountSuspended', accountId, at: 3 }]);
    expect(suspended?.suspended).toBe(true);
    expect(decideAccount(suspended, { type: 'Suspend', now: 4 })).toEqual([]);
    expect(decideAccount(suspended, { type: 'Resume', now: 4 })).toEqual([
      { type: 'AccountResumed', accountId, at: 4 },
    ]);
  });
  it('moving to another plan records the change; moving to the same plan changes nothing', () => {
    const account = fold([created()]);
    expect(decideAccount(account, { type: 'ChangePlan', plan: 'scale', now: 3 })).toEqual([
      { type: 'AccountPlanChanged', accountId, plan: 'scale', at: 3 },
    ]);
    expect(decideAccount(account, { type: 'ChangePlan', plan: 'free', now: 3 })).toEqual([]);
  });
});

describe('When the account holder sets a password', () => {
  const setPassword: AccountCommand = { type: 'SetPassword', passwordHash: 'scrypt$secret-hash', now: 7 };
  it('records when it was set and nothing of the hash', () => {
    expect(decideAccount(fold([created()]), setPassword)).toEqual([{ type: 'AccountPasswordSet', accountId, at: 7 }]);
  });
  it('the account shows when its password was last set, and had none before', () => {
    expect(fold([created()])?.passwordSetAt).toBeUndefined();
    expect(fold([created(), { type: 'AccountPasswordSet', accountId, at: 7 }])?.passwordSetAt).toBe(7);
  });
  it('an account that does not exist cannot have one', () => {
    expect(decideAccount(undefined, setPassword)).toBeInstanceOf(Refused);
  });
});

describe('When the account has dashboard sessions', () => {
  const ended = (sessionId: string, at: number): AccountEvent => ({ type: 'SessionEnded', accountId, sessionId, at });
  const suspended = () => fold([created(), { type: 'AccountSuspended', accountId, at: 3 }]);
  const startSession = (over: Partial<Extract<AccountCommand, { type: 'StartSession' }>> = {}): AccountCommand => ({
    type: 'StartSession',
    sessionId: 's3',
    secretHash: 'secret-hash',
    expiresAt: 100,
    checkedPasswordHash: 'scrypt$old',
    passwordHashNow: 'scrypt$old',
    now: 8,
    ...over,
  });

  it('a suspension ends all of them', () => {
    expect(decideAccount(fold([created()]), { type: 'Suspend', sessions: ['s1', 's2'], now: 3 })).toEqual([
      { type: 'AccountSuspended', accountId, at: 3 },
      ended('s1', 3),
      ended('s2', 3),
    ]);
  });
  it('suspending a suspended account ends the sessions an older version left open, and with none changes nothing', () => {
    expect(decideAccount(suspended(), { type: 'Suspend', sessions: ['s1'], now: 4 })).toEqual([ended('s1', 4)]);
    expect(decideAccount(suspended(), { type: 'Suspend', sessions: [], now: 4 })).toEqual([]);
  });
  it('a new password ends all of them, or all but the one it was changed from', () => {
    const account = fold([created()]);
    expect(decideAccount(account, { type: 'SetPassword', passwordHash: 'h', sessions: ['s1', 's2'], now: 7 })).toEqual([
      { type: 'AccountPasswordSet', accountId, at: 7 },
      ended('s1', 7),
      ended('s2', 7),
    ]);
    expect(
      decideAccount(account, {
        type: 'SetPassword',
        passwordHash: 'h',
        sessions: ['s1', 's2'],
        keepSessionId: 's2',
        now: 7,
      }),
    ).toEqual([{ type: 'AccountPasswordSet', accountId, at: 7 }, ended('s1', 7)]);
  });
  it('a session starts only while the password is the one the login checked and the account is not suspended', () => {
    expect(decideAccount(fold([created()]), startSession())).toEqual([
      { type: 'SessionStarted', accountId, sessionId: 's3', expiresAt: 100, at: 8 },
    ]);
    const changed = decideAccount(fold([created()]), startSession({ passwordHashNow: 'scrypt$new' }));
    expect((changed as Refused).message).toMatch(/password was changed while logging in/);
    expect((decideAccount(suspended(), startSession()) as Refused).message).toBe(
      'this account is suspended; contact the service operator',
    );
  });
  it('a suspended account gets no new API key, with a message that says why', () => {
    expect((decideAccount(suspended(), createKey('k1')) as Refused).message).toBe(
      'account acct_a is suspended: no API key can be created for it',
    );
  });
});

describe('When an account is created', () => {
  it.each([
    ['an escape sequence', 'evil\u001b[2J@example.com'],
    ['a bell', 'bell\u0007@example.com'],
    ['a C1 control', 'c1\u009b31m@example.com'],
    ['DEL', 'del\u007f@example.com'],
  ])('an email with %s is refused', (_, email) => {
    const refused = decideAccount(undefined, { type: 'CreateAccount', accountId, email, plan: 'free', now: 1 });
    expect((refused as Refused).message).toBe(
      'an email address must not contain control characters (escape sequences, line breaks, tabs)',
    );
  });
});
