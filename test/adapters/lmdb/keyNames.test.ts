import { describe, expect, it } from 'vitest';
import { decodeLogRecord, encodeLogRecord } from '../../../src/adapters/lmdb/logRecord.js';
import { type AccountCommand, decideAccount } from '../../../src/domain/account/decider.js';
import type { AccountEvent } from '../../../src/domain/account/events.js';
import { keyNameProblem } from '../../../src/domain/account/keyName.js';
import { type AccountState, evolveAccount, evolveKey, type KeyState } from '../../../src/domain/account/state.js';
import { Refused } from '../../../src/domain/errors.js';
import type { StoredEvent } from '../../../src/domain/events.js';
import { defaultPlans } from '../../../src/domain/plans.js';

const accountId = 'acct_a';
const account: AccountState = {
  accountId,
  email: 'a@example.com',
  plan: 'scale',
  suspended: false,
  createdAt: 1,
  activeKeys: 0,
};
const createKey = (name?: string): AccountCommand => ({
  type: 'CreateKey',
  keyId: 'key_1',
  keyHash: 'h',
  prefix: 'sk_abc',
  plans: defaultPlans,
  now: 2,
  ...(name === undefined ? {} : { name }),
});
const created: AccountEvent = {
  type: 'ApiKeyCreated',
  accountId,
  keyId: 'key_1',
  keyHash: 'h',
  prefix: 'sk_abc',
  at: 2,
};

describe('Key names', () => {
  it('a key created without a name is ApiKeyCreated alone, as before names existed', () => {
    expect(decideAccount(account, createKey())).toEqual([created]);
  });

  it('a key created with a name is ApiKeyCreated then ApiKeyNamed, in one decision', () => {
    expect(decideAccount(account, createKey('CI pipeline'))).toEqual([
      created,
      { type: 'ApiKeyNamed', accountId, keyId: 'key_1', name: 'CI pipeline', at: 2 },
    ]);
  });

  it('the key view carries the name; the account counts the key once', () => {
    const events = decideAccount(account, createKey('ünïcødé ✓')) as AccountEvent[];
    const key = events.reduce<KeyState | undefined>(evolveKey, undefined);
    expect(key).toMatchObject({ keyId: 'key_1', name: 'ünïcødé ✓', createdAt: 2 });
    expect(events.reduce<AccountState | undefined>(evolveAccount, account)?.activeKeys).toBe(1);
    // Unnamed keys have no name field at all (their stored view is unchanged).
    expect('name' in (evolveKey(undefined, created) as KeyState)).toBe(false);
  });

  it('a name is 1 to 100 characters (code points), trimmed, without control characters', () => {
    expect(keyNameProblem('a')).toBeUndefined();
    expect(keyNameProblem('x'.repeat(100))).toBeUndefined();
    expect(keyNameProblem('😀'.repeat(100))).toBeUndefined();
    expect(keyNameProblem('x'.repeat(101))).toMatch(/at most 100 characters; this one has 101/);
    expect(keyNameProblem('')).toMatch(/empty/);
    expect(keyNameProblem(' padded')).toMatch(/spaces/);
    expect(keyNameProblem('two\nlines')).toMatch(/control characters/);
    expect(keyNameProblem('tab\there')).toMatch(/control characters/);
  });

  it('the decider refuses a bad name and appends nothing', () => {
    for (const name of ['', ' ', 'x'.repeat(101), 'a\u0000b']) {
      expect(decideAccount(account, createKey(name))).toBeInstanceOf(Refused);
    }
  });

  it('ApiKeyNamed is written to and read back from a log record, beside the events that were there before', () => {
    const events: StoredEvent[] = [
      { ...created, seq: 7 },
      { type: 'ApiKeyNamed', accountId, keyId: 'key_1', name: 'CI pipeline', at: 2, seq: 8 },
      { type: 'ApiKeyRevoked', accountId, keyId: 'key_1', at: 3, seq: 9 },
    ];
    expect(decodeLogRecord(encodeLogRecord(events))).toEqual(events);
  });
});
