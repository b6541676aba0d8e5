import { describe, expect } from 'vitest';
import type { Contract } from '../contract.js';
import { commitOne, createAccount, eventsOf, submit } from '../fixtures.js';

/**
 * What a read sees (ports/Store.ts, ReadModel): everything committed before it began, by any process. A read may
 * share a snapshot with reads before it only while nothing can have been committed between them; a commit another
 * process has acknowledged is always seen by the reads that follow, even when news of it and an earlier read of this
 * process fall in one turn of the event loop (a server hears a CLI's commit in the same turn as it read for a timer).
 */
export const visibilityFeatures = ({ open, itWith, factory }: Contract) =>
  describe('reads see every commit made before them', () => {
    itWith(
      factory.anotherProcess,
      'sees a commit another process made durable after this process last read, in the same turn of the event loop',
      async (anotherProcess) => {
        const store = await open();
        await commitOne(store, createAccount(1));
        const other = await anotherProcess(store);
        expect(await store.reads.request('req_a')).toBeUndefined();
        expect(await store.reads.lastSeq()).toBe(1);
        const [outcome] = other.commitBlocking({ commands: [submit('req_a')] });
        expect(eventsOf(outcome).map((event) => event.seq)).toEqual([2]);
        expect(await store.reads.request('req_a')).toMatchObject({ status: 'waiting' });
        expect(await store.reads.lastSeq()).toBe(2);
        expect(await store.reads.dueWork(1_000)).toEqual({ now: true });
      },
    );

    itWith(
      factory.another,
      'sees a commit made through another handle as soon as that commit is acknowledged',
      async (another) => {
        const store = await open();
        const writer = await another(store);
        expect(await store.reads.account('acct_1')).toBeUndefined();
        await commitOne(writer, createAccount(1));
        expect(await store.reads.account('acct_1')).toMatchObject({ accountId: 'acct_1' });
        expect(await store.reads.accountIdByEmail('user1@example.com')).toBe('acct_1');
      },
    );
  });
