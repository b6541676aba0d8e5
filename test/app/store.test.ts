import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { type LmdbStore, openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import type { DomainEvent } from '../../src/domain/events.js';
import { tempDataDir } from '../support/testApp.js';

const accountCreated = (n: number): DomainEvent => ({
  type: 'AccountCreated',
  accountId: `acct_${n}`,
  email: `${n}@example.com`,
  plan: 'free',
  at: n,
});

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

  it('numbers events from 1 without gaps and updates the views in the same transaction', async () => {
    open();
    const seqs = await Promise.all(
      [1, 2, 3].map((n) => store.transactPromise((tx) => tx.append(accountCreated(n)).seq)),
    );
    expect(seqs.sort()).toEqual([1, 2, 3]);
    expect(store.reads.lastSeq()).toBe(3);
    expect(store.reads.account('acct_2')).toMatchObject({ email: '2@example.com', plan: 'free' });
    expect(store.reads.accountIdByEmail('3@example.com')).toBe('acct_3');
  });

  it('commits concurrent commands of one event-loop turn together (group commit)', async () => {
    open();
    const txnIds = await Promise.all(
      Array.from({ length: 200 }, (_, n) =>
        store.transactPromise((tx) => {
          tx.append(accountCreated(n));
          return store.databases.root.getWriteTxnId();
        }),
      ),
    );
    expect(new Set(txnIds).size).toBeLessThan(10);
    expect(store.reads.lastSeq()).toBe(200);
  });

  it('rolls back a command that throws after writing, and commits the others of its batch', async () => {
    open();
    const outcomes = await Promise.allSettled(
      [1, 2, 3].map((n) =>
        store.transactPromise((tx) => {
          tx.append(accountCreated(n));
          if (n === 2) throw new Error('fault after writing');
          return n;
        }),
      ),
    );
    expect(outcomes.map((o) => o.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect([...store.reads.events()].map((e) => (e as { accountId: string }).accountId)).toEqual(['acct_1', 'acct_3']);
    expect([...store.reads.events()].map((e) => e.seq)).toEqual([1, 2]);
    expect(store.reads.account('acct_2')).toBeUndefined();
  });

  it('keeps what was committed when the environment is reopened', async () => {
    open();
    await store.transactPromise((tx) => tx.append(accountCreated(7)));
    await store.close();
    store = openLmdbStore(dir);
    expect(store.reads.account('acct_7')?.email).toBe('7@example.com');
  });
});
