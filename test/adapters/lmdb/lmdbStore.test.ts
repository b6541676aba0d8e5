import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { requestKey } from '../../../src/adapters/lmdb/databases.js';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import type { Command } from '../../../src/domain/commands.js';
import { Refused } from '../../../src/domain/errors.js';
import type { CommandOutcome } from '../../../src/ports/Store.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const createAccount = (n: number, email = `${n}@example.com`): Command => ({
  type: 'Account',
  accountId: `acct_${n}`,
  command: { type: 'CreateAccount', accountId: `acct_${n}`, email, plan: 'free', now: n },
});

const seqsOf = (outcome: CommandOutcome | Error | undefined) =>
  outcome !== undefined && 'events' in outcome ? outcome.events.map((event) => event.seq) : [];

describe('The LMDB store', () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const open = () => {
    dir = tempDataDir('airs-store');
    store = openLmdbStore(dir);
  };

  it('numbers the events of a batch from 1 without gaps and updates the views in the same transaction', async () => {
    open();
    const outcomes = await store.commit({ commands: [1, 2, 3].map((n) => createAccount(n)) });
    expect(outcomes.map(seqsOf)).toEqual([[1], [2], [3]]);
    expect(store.syncReads.lastSeq()).toBe(3);
    expect(store.syncReads.account('acct_2')).toMatchObject({ email: '2@example.com', plan: 'free' });
    expect(store.syncReads.accountIdByEmail('3@example.com')).toBe('acct_3');
  });

  it('continues the numbering across batches, also batches in flight at the same time', async () => {
    open();
    const batches = await Promise.all(
      Array.from({ length: 20 }, (_, b) =>
        store.commit({ commands: [createAccount(2 * b), createAccount(2 * b + 1)] }),
      ),
    );
    const seqs = batches.flatMap((outcomes) => outcomes.flatMap(seqsOf)).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
  });

  it('decides each command against what the commands before it in the batch did', async () => {
    open();
    const [first, second, third] = await store.commit({
      commands: [createAccount(1, 'same@example.com'), createAccount(2, 'same@example.com'), createAccount(3)],
    });
    expect(seqsOf(first)).toEqual([1]);
    expect(second).toBeInstanceOf(Refused);
    expect((second as Refused).message).toMatch(/already exists/);
    // A refused command leaves the others of its batch committed, and takes no sequence number.
    expect(seqsOf(third)).toEqual([2]);
    expect(store.syncReads.account('acct_2')).toBeUndefined();
    expect(store.syncReads.account('acct_3')).toBeDefined();
  });

  it('fails a command whose deciding throws on its own, and commits the rest of its batch', async () => {
    open();
    const broken = { type: 'NoSuchCommand', reqId: 'req_x', now: 1 } as unknown as Command;
    const outcomes = await store.commit({ commands: [createAccount(1), broken, createAccount(2)] });
    expect(outcomes[1]).toBeInstanceOf(Error);
    expect(outcomes[1]).not.toBeInstanceOf(Refused);
    expect([outcomes[0], outcomes[2]].map(seqsOf)).toEqual([[1], [2]]);
  });

  it('writes nothing of a batch when a write in it fails, and rejects the whole batch', async () => {
    open();
    await store.commit({ commands: [createAccount(1)] });
    // The log record is written after the batch's views: a fault there must take the views back with it.
    const { log } = store.databases;
    const put = log.put.bind(log);
    log.put = () => {
      throw new Error('injected write fault');
    };
    await expect(store.commit({ commands: [submitCommand('req_fine'), createAccount(2)] })).rejects.toThrow(/injected/);
    log.put = put;
    store.syncReads.refresh();
    expect(store.syncReads.lastSeq()).toBe(1);
    expect(store.syncReads.request('req_fine')).toBeUndefined();
    expect(store.syncReads.account('acct_2')).toBeUndefined();
    // The store goes on: the next batch numbers its events after the last committed one.
    expect((await store.commit({ commands: [submitCommand('req_next')] })).map(seqsOf)).toEqual([[2]]);
  });

  it('decides a batch that runs behind a rolled-back one without anything that one wrote', async () => {
    open();
    await store.commit({ commands: [createAccount(1)] });
    // The expiry groups are written last in a batch, after its request records: the fault comes late.
    const { expiry } = store.databases.groups;
    const put = expiry.put.bind(expiry);
    let faults = 1;
    expiry.put = ((...args: Parameters<typeof put>) => {
      if (faults-- > 0) throw new Error('injected write fault');
      return put(...args);
    }) as typeof expiry.put;
    // Handed over together, the two batches are written one behind the other; the first one is rolled back.
    const first = store.commit({ commands: [submitCommand('req_x')] });
    const second = store.commit({ commands: [{ type: 'StartAttempt', reqId: 'req_x', now: 1_001 }] });
    await expect(first).rejects.toThrow(/injected/);
    const [start] = await second;
    expiry.put = put;
    expect(start).toMatchObject({ _tag: 'LifecycleViolation' });
    store.syncReads.refresh();
    expect(store.syncReads.request('req_x')).toBeUndefined();
    expect(store.syncReads.lastSeq()).toBe(1);
  });

  it('keeps the prompt with the submit that introduces it, and a response only with an accepted completion', async () => {
    open();
    const outcomes = await store.commit({
      commands: [
        submitCommand('req_a'),
        // Not started: the machine refuses a completion, so no response text may be stored.
        { type: 'RecordSuccess', reqId: 'req_a', responseChars: 3, response: 'bye', now: 1_001 },
      ],
    });
    expect(seqsOf(outcomes[0])).toEqual([1]);
    expect(outcomes[1]).toMatchObject({ _tag: 'LifecycleViolation' });
    expect(store.syncReads.requestWithText('req_a')).toMatchObject({ state: { status: 'waiting' }, text: 'hello' });
  });

  it('drops the prompt from a request once it settles, and all text once it expires', async () => {
    open();
    const raw = () => store.databases.requests.get(requestKey('req_a'))?.toString('latin1') ?? '';
    await store.commit({
      commands: [
        submitCommand('req_a'),
        { type: 'StartAttempt', reqId: 'req_a', now: 1_001 },
        { type: 'RecordSuccess', reqId: 'req_a', responseChars: 3, response: 'bye', now: 1_002 },
      ],
    });
    expect(store.syncReads.requestWithText('req_a')).toMatchObject({ state: { status: 'completed' }, text: 'bye' });
    expect(raw()).toContain('bye');
    expect(raw()).not.toContain('hello');
    await store.commit({ commands: [{ type: 'Expire', reqId: 'req_a', now: 61_000 }] });
    expect(store.syncReads.requestWithText('req_a')).toMatchObject({ state: { status: 'expired' }, text: undefined });
    expect(raw()).not.toContain('bye');
  });

  it('carries the prompt over when a waiting request is started from the queue', async () => {
    open();
    await store.commit({ commands: [submitCommand('req_a')] });
    await store.commit({ commands: [{ type: 'StartAttempt', reqId: 'req_a', now: 1_001 }] });
    expect(store.syncReads.requestWithText('req_a')).toMatchObject({ state: { status: 'processing' }, text: 'hello' });
  });

  it('spends rate-limit budgets outside the log: a budget refuses once its burst is spent and refills with time', async () => {
    open();
    const spend = { accountId: 'acct_1', budget: 'submits', now: 10_000, limit: 2, windowMs: 2_000 };
    const first = await store.spend([spend, spend, spend]);
    expect(first.map((decision) => decision.allowed)).toEqual([true, true, false]);
    expect(await store.reads.limiterState('acct_1', 'polls')).toBeUndefined();
    expect((await store.spend([{ ...spend, now: 11_000 }]))[0]?.allowed).toBe(true);
    expect(store.syncReads.lastSeq()).toBe(0);
  });

  it('keeps what was committed when the environment is reopened', async () => {
    open();
    await store.commit({ commands: [createAccount(7)] });
    await store.close();
    store = openLmdbStore(dir);
    expect(store.syncReads.account('acct_7')?.email).toBe('7@example.com');
  });
});
