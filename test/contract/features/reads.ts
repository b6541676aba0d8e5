import { describe, expect, it } from 'vitest';
import type { AccountCommand } from '../../../src/domain/account/decider.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { passwordCredentialKey, sessionCredentialKey } from '../../../src/domain/commands.js';
import { Refused } from '../../../src/domain/errors.js';
import type { RequestPage } from '../../../src/ports/Store.js';
import type { Contract } from '../contract.js';
import {
  accountId,
  answer,
  batchIdOf,
  claimOne,
  commitOne,
  createAccount,
  createBatch,
  createFile,
  createKey,
  fileIdOf,
  lineSubmit,
  queueOf,
  startBatch,
  submit,
  takeBatch,
} from '../fixtures.js';

const hourMs = 3_600_000;
const dayMs = 86_400_000;

const accountCommand = (n: number, command: AccountCommand): Command => ({
  type: 'Account',
  accountId: accountId(n),
  command,
});

const startSession = (n: number, sessionId: string, checkedPasswordHash: string, now = 100): Command =>
  accountCommand(n, {
    type: 'StartSession',
    sessionId,
    secretHash: `secret-of-${sessionId}`,
    expiresAt: now + hourMs,
    checkedPasswordHash,
    now,
  });

const idsOf = (requests: readonly { readonly context: { readonly reqId: string } }[]) =>
  requests.map((request) => request.context.reqId);

/**
 * Every read of the port that no other feature holds on every store: accounts and keys, sessions and credentials, an
 * account's requests page by page (both cursors), the per-hour and per-day counts, keys' last uses and the requests
 * being processed. Each is read through the port alone, so each store answers the same.
 */
export const readFeatures = ({ open }: Contract) =>
  describe('reads of the read model', () => {
    it('finds accounts by id and email, all accounts in id order, keys by id and hash and an account its own keys, and changes the accounts version only when an account or key changes', async () => {
      const store = await open();
      const version0 = await store.reads.accountsVersion();
      await store.commit({ commands: [createAccount(2), createAccount(1), createKey(1, 'key_b')] });
      // A revoked key is still the account's (its plan allows one active key).
      const revoked = await store.reads.key('key_b');
      if (revoked === undefined) throw new Error('key_b is missing');
      await commitOne(store, accountCommand(1, { type: 'RevokeKey', key: revoked, now: 3 }));
      await store.commit({ commands: [createKey(1, 'key_a', 4), createKey(2, 'key_c', 4)] });
      const version1 = await store.reads.accountsVersion();
      expect(version1).not.toBe(version0);

      expect(await store.reads.account(accountId(1))).toMatchObject({ accountId: accountId(1), activeKeys: 1 });
      expect(await store.reads.account(accountId(9))).toBeUndefined();
      expect(await store.reads.accountIdByEmail('user2@example.com')).toBe(accountId(2));
      expect(await store.reads.accountIdByEmail('nobody@example.com')).toBeUndefined();
      expect((await store.reads.accounts()).map((account) => account.accountId)).toEqual([accountId(1), accountId(2)]);
      expect(await store.reads.key('key_c')).toMatchObject({ keyId: 'key_c', accountId: accountId(2) });
      expect(await store.reads.key('key_b')).toMatchObject({ accountId: accountId(1), revokedAt: 3 });
      expect(await store.reads.key('key_none')).toBeUndefined();
      expect(await store.reads.keyIdByHash('hash_key_a')).toBe('key_a');
      expect(await store.reads.keyIdByHash('hash_none')).toBeUndefined();
      expect((await store.reads.keysOf(accountId(1))).map((key) => key.keyId)).toEqual(['key_a', 'key_b']);
      expect((await store.reads.keysOf(accountId(2))).map((key) => key.keyId)).toEqual(['key_c']);
      expect(await store.reads.keysOf(accountId(9))).toEqual([]);

      // A request is no account or key: an API key's cached answer stays current; a suspension is.
      await commitOne(store, submit('req_1'));
      expect(await store.reads.accountsVersion()).toBe(version1);
      await commitOne(store, accountCommand(2, { type: 'Suspend', now: 5 }));
      expect(await store.reads.accountsVersion()).not.toBe(version1);
      expect(await store.reads.account(accountId(2))).toMatchObject({ suspended: true });
    });

    it("keeps an account's password hash and its sessions' secret hashes beside the log, ends sessions with a suspension or a new password, and refuses a session checked against a password changed meanwhile", async () => {
      const store = await open();
      await store.commit({ commands: [createAccount(1), createAccount(2)] });
      expect(await store.reads.credential(passwordCredentialKey(accountId(1)))).toBeUndefined();
      await commitOne(store, accountCommand(1, { type: 'SetPassword', passwordHash: 'hash-1', now: 10 }));
      expect(await store.reads.credential(passwordCredentialKey(accountId(1)))).toBe('hash-1');

      await store.commit({
        commands: [startSession(1, 'sess_a', 'hash-1'), startSession(1, 'sess_b', 'hash-1', 110)],
      });
      expect(await store.reads.session('sess_a')).toEqual({
        sessionId: 'sess_a',
        accountId: accountId(1),
        startedAt: 100,
        expiresAt: 100 + hourMs,
      });
      expect(await store.reads.credential(sessionCredentialKey('sess_b'))).toBe('secret-of-sess_b');
      expect(await store.reads.session('sess_none')).toBeUndefined();

      // Checked against the hash before a change: refused, and nothing kept.
      await commitOne(
        store,
        accountCommand(1, { type: 'SetPassword', passwordHash: 'hash-2', keepSessionId: 'sess_b', now: 200 }),
      );
      expect(await store.reads.credential(passwordCredentialKey(accountId(1)))).toBe('hash-2');
      expect(await commitOne(store, startSession(1, 'sess_late', 'hash-1', 210))).toBeInstanceOf(Refused);
      expect(await store.reads.session('sess_late')).toBeUndefined();
      expect(await store.reads.credential(sessionCredentialKey('sess_late'))).toBeUndefined();
      // The new password ended every other session, with its secret.
      expect(await store.reads.session('sess_a')).toBeUndefined();
      expect(await store.reads.credential(sessionCredentialKey('sess_a'))).toBeUndefined();
      expect(await store.reads.session('sess_b')).toMatchObject({ accountId: accountId(1) });

      // Another account's session is not its own to end; a logout ends one; a suspension ends the rest.
      await commitOne(
        store,
        accountCommand(1, {
          type: 'StartSession',
          sessionId: 'sess_c',
          secretHash: 'c',
          expiresAt: hourMs,
          checkedPasswordHash: 'hash-2',
          now: 300,
        }),
      );
      expect(
        await commitOne(store, accountCommand(2, { type: 'EndSession', sessionId: 'sess_c', now: 310 })),
      ).toBeInstanceOf(Refused);
      await commitOne(store, accountCommand(1, { type: 'EndSession', sessionId: 'sess_c', now: 320 }));
      expect(await store.reads.session('sess_c')).toBeUndefined();
      expect(await store.reads.credential(sessionCredentialKey('sess_c'))).toBeUndefined();
      await commitOne(store, accountCommand(1, { type: 'Suspend', now: 400 }));
      expect(await store.reads.session('sess_b')).toBeUndefined();
      expect(await store.reads.credential(sessionCredentialKey('sess_b'))).toBeUndefined();
      expect(await store.reads.credential(passwordCredentialKey(accountId(1)))).toBe('hash-2');
    });

    it("pages an account's requests newest first, older than one cursor or just newer than another, ties of creation time in id order, without expired requests or another account's", async () => {
      const store = await open();
      await store.commit({
        commands: [
          submit('req_a', { now: 1_000 }),
          submit('req_c', { now: 2_000 }),
          submit('req_b', { now: 2_000 }),
          submit('req_d', { now: 3_000 }),
          submit('req_e', { now: 4_000, ttlMs: 1_000 }),
          submit('req_f', { now: 5_000 }),
          submit('req_other', { now: 2_500, account: 2 }),
        ],
      });
      await commitOne(store, { type: 'Expire', reqId: 'req_e', now: 5_000 });
      const page = async (request: RequestPage) => idsOf(await store.reads.requestsOf(accountId(1), request));
      const newestFirst = ['req_f', 'req_d', 'req_c', 'req_b', 'req_a'];
      expect(await page({ limit: 10 })).toEqual(newestFirst);
      expect(await page({ limit: 2 })).toEqual(['req_f', 'req_d']);
      // Older than a cursor: the cursor's own request is not on the page, whatever its place among ties.
      expect(await page({ before: { createdAt: 3_000, reqId: 'req_d' }, limit: 2 })).toEqual(['req_c', 'req_b']);
      expect(await page({ before: { createdAt: 2_000, reqId: 'req_c' }, limit: 10 })).toEqual(['req_b', 'req_a']);
      expect(await page({ before: { createdAt: 1_000, reqId: 'req_a' }, limit: 10 })).toEqual([]);
      // Just newer than a cursor: the nearest ones, still newest first.
      expect(await page({ after: { createdAt: 1_000, reqId: 'req_a' }, limit: 2 })).toEqual(['req_c', 'req_b']);
      expect(await page({ after: { createdAt: 2_000, reqId: 'req_b' }, limit: 10 })).toEqual([
        'req_f',
        'req_d',
        'req_c',
      ]);
      expect(await page({ after: { createdAt: 5_000, reqId: 'req_f' }, limit: 10 })).toEqual([]);
      // A cursor need not be a request of the account (one that expired since, say).
      expect(await page({ before: { createdAt: 4_000, reqId: 'req_e' }, limit: 1 })).toEqual(['req_d']);
      expect(await page({ after: { createdAt: 4_000, reqId: 'req_e' }, limit: 10 })).toEqual(['req_f']);
      expect(await page({ limit: 0 })).toEqual([]);
      expect(idsOf(await store.reads.requestsOf(accountId(2), { limit: 10 }))).toEqual(['req_other']);
      expect(await store.reads.requestsOf(accountId(3), { limit: 10 })).toEqual([]);
    });

    it("pages an account's interactive requests without its batches' lines and its lines without its interactive requests, by the same cursors, newest first", async () => {
      const store = await open();
      const batchId = batchIdOf(1);
      await store.commit({
        commands: [createFile(fileIdOf(1)), createBatch(batchId, fileIdOf(1)), takeBatch(batchId)],
      });
      await commitOne(store, startBatch(batchId, 3));
      await store.commit({
        commands: [
          submit('req_a', { now: 1_000 }),
          lineSubmit(batchId, 1, { now: 1_500 }),
          submit('req_b', { now: 2_000 }),
          lineSubmit(batchId, 2, { now: 2_500 }),
          lineSubmit(batchId, 3, { now: 3_000, ttlMs: 1_000 }),
          submit('req_c', { now: 3_500 }),
          submit('req_other', { now: 2_200, account: 2 }),
        ],
      });
      await commitOne(store, { type: 'Expire', reqId: lineRequestId(batchId, 3), now: 4_000 });
      const [line1, line2] = [lineRequestId(batchId, 1), lineRequestId(batchId, 2)];
      const page = async (request: RequestPage) => idsOf(await store.reads.requestsOf(accountId(1), request));
      expect(await page({ limit: 10 })).toEqual(['req_c', line2, 'req_b', line1, 'req_a']);
      expect(await page({ limit: 10, kind: 'interactive' })).toEqual(['req_c', 'req_b', 'req_a']);
      expect(await page({ limit: 10, kind: 'batch' })).toEqual([line2, line1]);
      // One row read per row shown: a page of one kind is full however many of the other lie between.
      expect(await page({ limit: 2, kind: 'interactive' })).toEqual(['req_c', 'req_b']);
      expect(await page({ before: { createdAt: 2_000, reqId: 'req_b' }, limit: 2, kind: 'interactive' })).toEqual([
        'req_a',
      ]);
      expect(await page({ after: { createdAt: 1_000, reqId: 'req_a' }, limit: 1, kind: 'interactive' })).toEqual([
        'req_b',
      ]);
      expect(await page({ before: { createdAt: 2_500, reqId: line2 }, limit: 10, kind: 'batch' })).toEqual([line1]);
      expect(await page({ after: { createdAt: 1_500, reqId: line1 }, limit: 10, kind: 'batch' })).toEqual([line2]);
      expect(idsOf(await store.reads.requestsOf(accountId(2), { limit: 10, kind: 'batch' }))).toEqual([]);
      expect(idsOf(await store.reads.requestsOf(accountId(2), { limit: 10, kind: 'interactive' }))).toEqual([
        'req_other',
      ]);
    });

    it("counts an account's requests by the hour they were created and its tokens by the UTC day they completed, with zeros where there were none", async () => {
      const store = await open();
      const from = 10 * dayMs;
      const ttlMs = 3 * dayMs;
      await store.commit({
        commands: [
          submit('req_1', { now: from, ttlMs }),
          submit('req_2', { now: from + hourMs - 1, ttlMs }),
          submit('req_3', { now: from + 2 * hourMs, ttlMs }),
          submit('req_4', { now: from + 2 * hourMs + 5, account: 2, ttlMs }),
          submit('req_5', { now: from - 1, ttlMs }),
        ],
      });
      expect(await store.reads.requestCountsByHour(accountId(1), from, 3)).toEqual([2, 0, 1]);
      expect(await store.reads.requestCountsByHour(accountId(1), from - hourMs, 2)).toEqual([1, 2]);
      expect(await store.reads.requestCountsByHour(accountId(1), from, 0)).toEqual([]);
      expect(await store.reads.requestCountsByHour(accountId(3), from, 2)).toEqual([0, 0]);

      // Two answers on one day, one on the next: the day is the completion's, not the request's.
      const queue = queueOf(store);
      for (const [reqId, at] of [
        ['req_5', from + 3 * hourMs],
        ['req_1', from + 4 * hourMs],
        ['req_2', from + dayMs + 1],
      ] as const) {
        await commitOne(store, { type: 'StartAttempt', reqId, now: at, owner: 'A', leaseMs: 10_000 });
        expect(await queue.recordSuccess({ reqId, attempt: 1, owner: 'A' }, answer('ok'), at + 1)).toBe('recorded');
      }
      expect(await store.reads.usageByDay(accountId(1), from - dayMs, 3)).toEqual([
        { day: from - dayMs, inputTokens: 0, outputTokens: 0 },
        { day: from, inputTokens: 6, outputTokens: 10 },
        { day: from + dayMs, inputTokens: 3, outputTokens: 5 },
      ]);
      expect(await store.reads.usageByDay(accountId(2), from, 1)).toEqual([
        { day: from, inputTokens: 0, outputTokens: 0 },
      ]);
      expect(await store.reads.usageByDay(accountId(1), from, 0)).toEqual([]);
      // Expired requests are counted by the hour no more; the tokens they used stay.
      await commitOne(store, { type: 'Expire', reqId: 'req_1', now: from + 3 * dayMs });
      expect(await store.reads.requestCountsByHour(accountId(1), from, 1)).toEqual([1]);
      expect((await store.reads.usageByDay(accountId(1), from, 1))[0]).toMatchObject({ inputTokens: 6 });
    });

    it('keeps when each key was last used as the latest use committed with a batch, and nothing for a key never used', async () => {
      const store = await open();
      await store.commit({
        commands: [createAccount(1), createKey(1, 'key_a')],
        keyUses: [{ keyId: 'key_a', at: 10 }],
      });
      expect(await store.reads.keyLastUsed('key_a')).toBe(10);
      await store.commit({
        commands: [],
        keyUses: [
          { keyId: 'key_a', at: 20 },
          { keyId: 'key_b', at: 15 },
        ],
      });
      expect(await store.reads.keyLastUsed('key_a')).toBe(20);
      expect(await store.reads.keyLastUsed('key_b')).toBe(15);
      expect(await store.reads.keyLastUsed('key_none')).toBeUndefined();
    });

    it('lists the requests being processed, with leases running or lapsed, up to the limit, and none once they settle', async () => {
      const store = await open();
      await store.commit({ commands: [submit('req_1'), submit('req_2', { account: 2 }), submit('req_3')] });
      expect(await store.reads.processing(10)).toEqual([]);
      const queue = queueOf(store);
      const first = await claimOne(queue, 'A', 1_000, { max: 1 });
      const second = await claimOne(queue, 'B', 5_000, { max: 1 });
      const processing = async (limit: number) => [...(await store.reads.processing(limit))].sort();
      expect(await processing(10)).toEqual([first.reqId, second.reqId].sort());
      expect(await store.reads.processing(1)).toHaveLength(1);
      expect(await store.reads.processing(0)).toEqual([]);
      // The first lease lapsed at 11 000: still being processed, until a claim takes it over or it settles.
      expect((await store.reads.dueWork(12_000)).now).toBe(true);
      expect(await processing(10)).toEqual([first.reqId, second.reqId].sort());
      expect(await queue.recordSuccess(second, answer('ok'), 6_000)).toBe('recorded');
      expect(await processing(10)).toEqual([first.reqId]);
      await commitOne(store, { type: 'Cancel', reqId: first.reqId, now: 7_000 });
      expect(await store.reads.processing(10)).toEqual([]);
    });
  });
