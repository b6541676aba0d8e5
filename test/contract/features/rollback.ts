import { describe, expect, it } from 'vitest';
import { isRefusal } from '../../../src/domain/commands.js';
import { LifecycleViolation, Refused } from '../../../src/domain/errors.js';
import { StorageFault } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  commitOne,
  createAccount,
  createKey,
  oneToN,
  replay,
  seqsOf,
  statusOf,
  submit,
  unknownCommand,
} from '../fixtures.js';

/**
 * What `commit` promises about failure (ports/Store.ts): a refused command is an outcome of its own, and so is a
 * command whose deciding throws (an Error that is not a refusal); neither touches the other commands of its batch. An
 * I/O failure rejects the whole batch: nothing of it was written; when the disk is the cause the rejection is a
 * StorageFault, and the same batch may succeed later.
 */
export const rollbackFeatures = ({ open, itWith, factory }: Contract) =>
  describe('whole-batch rollback', () => {
    it('fails a command whose deciding throws on its own: it appends nothing, takes no number, and the rest of its batch is committed', async () => {
      const store = await open();
      const outcomes = await store.commit({
        commands: [
          createAccount(1),
          submit('req_a'),
          unknownCommand('req_b'),
          { type: 'StartAttempt', reqId: 'req_a', now: 1_001 },
        ],
      });
      expect(outcomes).toHaveLength(4);
      const thrown = outcomes[2];
      expect(thrown).toBeInstanceOf(Error);
      expect(isRefusal(thrown)).toBe(false);
      expect(outcomes.map(seqsOf)).toEqual([[1], [2], [], [3]]);
      expect(await statusOf(store, 'req_a')).toBe('processing');
      expect(await store.reads.request('req_b')).toBeUndefined();
      expect((await replay(store)).map((event) => event.type)).toEqual([
        'AccountCreated',
        'RequestQueued',
        'RequestProcessingStarted',
      ]);
    });

    it('refuses a key whose id another account took, in an earlier batch or earlier in the same one, and keeps the first', async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), createAccount(2), createKey(1, 'key_same')] });
      const outcomes = await store.commit({ commands: [createKey(2, 'key_same'), createKey(2, 'key_other')] });
      expect(outcomes[0]).toBeInstanceOf(Refused);
      expect(outcomes[1]).not.toBeInstanceOf(Error);
      expect((await store.reads.key('key_same'))?.accountId).toBe(accountId(1));
      expect((await store.reads.keysOf(accountId(2))).map((key) => key.keyId)).toEqual(['key_other']);
      const [first, second] = await store
        .commit({
          commands: [createAccount(3), createAccount(4), createKey(3, 'key_twice'), createKey(4, 'key_twice')],
        })
        .then((all) => all.slice(2));
      expect(first).not.toBeInstanceOf(Error);
      expect(second).toBeInstanceOf(Refused);
      expect((await store.reads.key('key_twice'))?.accountId).toBe(accountId(3));
    });

    it('refuses a command as an outcome of its own, and decides the commands after it without it', async () => {
      const store = await open();
      const outcomes = await store.commit({
        commands: [
          createAccount(1, 'same@example.com'),
          createAccount(2, 'same@example.com'),
          // Not started yet: the machine refuses a completion, and no response text may be kept.
          { type: 'RecordSuccess', reqId: 'req_a', responseChars: 3, response: 'bye', now: 1_001 },
          submit('req_a'),
          { type: 'RecordSuccess', reqId: 'req_a', responseChars: 3, response: 'bye', now: 1_001 },
          createAccount(3),
        ],
      });
      expect(outcomes[1]).toBeInstanceOf(Refused);
      expect(outcomes[2]).toBeInstanceOf(LifecycleViolation);
      expect(outcomes[4]).toBeInstanceOf(LifecycleViolation);
      expect(outcomes.map(seqsOf)).toEqual([[1], [], [], [2], [], [3]]);
      expect(await store.reads.account(accountId(2))).toBeUndefined();
      expect(await store.reads.accountIdByEmail('same@example.com')).toBe(accountId(1));
      expect(await store.reads.requestWithText('req_a')).toMatchObject({
        state: { status: 'waiting' },
        text: 'hello req_a',
      });
      expect(await store.reads.lastSeq()).toBe(3);
    });

    itWith(
      factory.failingDisk,
      'rejects a whole batch with a StorageFault when the disk fails, writes nothing of it, and commits the same batch once the disk recovers',
      async (failingDisk) => {
        const { store, fail, recover } = await failingDisk();
        await store.commit({ commands: [createAccount(1), submit('req_before')] });
        // Room the store holds already: a large prompt, dropped when its request expires, a few commits back (so
        // that its space can be used again). The small commands of the batch fit in it; the batch's prompt does not,
        // so a store that wrote the batch a command at a time would keep the small ones.
        await commitOne(store, submit('req_spent', { prompt: 'y'.repeat(500_000), now: 500, ttlMs: 100 }));
        await commitOne(store, { type: 'Expire', reqId: 'req_spent', now: 600 });
        await commitOne(store, createAccount(3));
        await commitOne(store, createAccount(4));
        const committed = await replay(store);
        const lastBefore = committed.length;
        const batch = {
          commands: [
            createAccount(2),
            { type: 'StartAttempt' as const, reqId: 'req_before', now: 1_001 },
            submit('req_big', { prompt: 'x'.repeat(1_000_000) }),
          ],
        };
        await fail();
        try {
          await expect(store.commit(batch)).rejects.toBeInstanceOf(StorageFault);
          // Nothing of the batch, not even its small commands, and no number taken.
          expect(await store.reads.lastSeq()).toBe(lastBefore);
          expect(await store.reads.account(accountId(2))).toBeUndefined();
          expect(await store.reads.accountIdByEmail('user2@example.com')).toBeUndefined();
          expect(await statusOf(store, 'req_before')).toBe('waiting');
          expect(await store.reads.request('req_big')).toBeUndefined();
          expect((await store.reads.dueWork(1_001)).now).toBe(true);
          expect(await replay(store)).toEqual(committed);
        } finally {
          await recover();
        }
        const outcomes = await store.commit(batch);
        expect(outcomes.map(seqsOf)).toEqual([[lastBefore + 1], [lastBefore + 2], [lastBefore + 3]]);
        expect(await statusOf(store, 'req_before')).toBe('processing');
        expect((await store.reads.requestWithText('req_big'))?.text).toHaveLength(1_000_000);
        expect((await replay(store)).map((event) => event.seq)).toEqual(oneToN(lastBefore + 3));
      },
    );
  });
