import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeIds, decodeRecord, encodeIds, encodeRecord } from '../../../src/adapters/lmdb/codec.js';
import { lastSeqKey, requestKey } from '../../../src/adapters/lmdb/databases.js';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { encodeLogRecord } from '../../../src/adapters/lmdb/logRecord.js';
import { accountSessionsIndexedKey } from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { AccountCommand } from '../../../src/domain/account/decider.js';
import type { Command } from '../../../src/domain/commands.js';
import type { StoredEvent } from '../../../src/domain/events.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

/** Queued and started in one write, as the server submits when a worker is free. */
const submitAndStart = (reqId: string, now = 1_000): Command =>
  submitCommand(reqId, now, { startNow: { owner: 'proc_test', leaseMs: 30_000 } });
const complete = (reqId: string): Command => ({
  type: 'RecordSuccess',
  reqId,
  responseChars: 3,
  response: 'bye',
  now: 1_100,
  owner: 'proc_test',
  attempt: 1,
});

describe("LMDB's replay --verify (views rebuilt from the log and compared)", () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A store with three requests, two completed and one being processed, written as the server writes them. */
  const written = async () => {
    dir = tempDataDir('airs-verify');
    store = openLmdbStore(dir);
    await store.commit({ commands: [submitAndStart('req_a'), submitAndStart('req_b'), submitAndStart('req_c')] });
    await store.commit({ commands: [complete('req_a'), complete('req_b')] });
    store.syncReads.refresh();
    return store.databases;
  };
  const differences = () => verifyViews(store.databases).differences;

  it('finds nothing to report in what the store wrote', async () => {
    await written();
    expect(verifyViews(store.databases)).toMatchObject({ events: 8, requests: 3, differences: [] });
  });

  it('names a request whose stored view differs from the fold of its events', async () => {
    const dbs = await written();
    const record = decodeRecord(dbs.requests.get(requestKey('req_b')) as Buffer);
    dbs.requests.putSync(requestKey('req_b'), encodeRecord({ ...record.state, status: 'failed' }, undefined));
    expect(differences()).toEqual([expect.stringMatching(/^request req_b: the stored view differs/)]);
  });

  it('names a request whose record is missing, and one stored that the log never made', async () => {
    const dbs = await written();
    const record = dbs.requests.get(requestKey('req_a')) as Buffer;
    dbs.requests.removeSync(requestKey('req_a'));
    dbs.requests.putSync(requestKey('req_z'), record);
    expect(differences()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^request req_a: produced by the log but not stored/),
        expect.stringMatching(/^request req_z: stored but not produced by the log/),
      ]),
    );
  });

  it('notices text kept that the status no longer calls for', async () => {
    const dbs = await written();
    const record = decodeRecord(dbs.requests.get(requestKey('req_c')) as Buffer);
    // Processing keeps the prompt; a record without it is wrong.
    dbs.requests.putSync(requestKey('req_c'), encodeRecord(record.state, ''));
    expect(differences()).toEqual([expect.stringMatching(/^request req_c: no text stored while it is processing/)]);
  });

  it('notices a request missing from its group of a grouped index', async () => {
    const dbs = await written();
    const [key] = Array.from(dbs.groups.expiry.getKeys({}));
    const ids = decodeIds(dbs.groups.expiry.get(key as number) as Buffer);
    dbs.groups.expiry.putSync(key as number, encodeIds(ids.filter((id) => id !== 'req_b')));
    expect(differences()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^group expiry \d+: does not hold req_b, the log does/)]),
    );
  });

  it('reports a group whose ids are out of order once, however often its members ask for it', async () => {
    dir = tempDataDir('airs-verify');
    store = openLmdbStore(dir);
    // Members of the two expiry groups alternate in the log, so the first group is read twice.
    await store.commit({
      commands: [submitAndStart('req_a'), submitAndStart('req_d', 2_000), submitAndStart('req_b')],
    });
    store.syncReads.refresh();
    const dbs = store.databases;
    const key = 61_000;
    expect(decodeIds(dbs.groups.expiry.get(key) as Buffer)).toEqual(['req_a', 'req_b']);
    dbs.groups.expiry.putSync(key, encodeIds(['req_b', 'req_a']));
    expect(differences()).toEqual([`group expiry ${key}: ids out of order at req_a`]);
  });

  it('checks the order of a stored group that no request of the log belongs to', async () => {
    const dbs = await written();
    dbs.groups.expiry.putSync(5, encodeIds(['req_y', 'req_x']));
    expect(differences()).toEqual([
      'group expiry 5: ids out of order at req_x',
      'group expiry: 5 ids stored, the log gives 3',
    ]);
  });

  it('notices a request queued twice in the log', async () => {
    const dbs = await written();
    // One more log record, appended by hand: req_a queued again.
    const again: StoredEvent = {
      type: 'RequestQueued',
      reqId: 'req_a',
      accountId: 'acct_1',
      keyId: 'key_1',
      model: 'echo',
      promptChars: 5,
      at: 2_000,
      expiresAt: 62_000,
      seq: 9,
    };
    dbs.log.putSync(9, encodeLogRecord([again]));
    dbs.meta.putSync(lastSeqKey, 9);
    expect(differences().length).toBeGreaterThan(0);
  });

  it('stops at a gap in the log', async () => {
    const dbs = await written();
    // The first batch's record (events 1 to 6) taken away: the log begins at event 7.
    dbs.log.removeSync(6);
    expect(() => verifyViews(dbs)).toThrow(/gap: expected event 1, found 7/);
  });

  /** An account with a password and two dashboard sessions, written as the server writes them. */
  const withSessions = async () => {
    dir = tempDataDir('airs-verify');
    store = openLmdbStore(dir);
    const account = (command: AccountCommand): Command => ({ type: 'Account', accountId: 'acct_s', command });
    const start = (sessionId: string) =>
      account({
        type: 'StartSession',
        sessionId,
        secretHash: `secret-of-${sessionId}`,
        expiresAt: 10_000,
        checkedPasswordHash: 'scrypt$hash',
        now: 3,
      });
    await store.commit({
      commands: [
        account({ type: 'CreateAccount', accountId: 'acct_s', email: 's@example.com', plan: 'free', now: 1 }),
        account({ type: 'SetPassword', passwordHash: 'scrypt$hash', now: 2 }),
        start('sess_1'),
        start('sess_2'),
      ],
    });
    store.syncReads.refresh();
    return { dbs: store.databases, account };
  };

  it('finds the sessions a suspension ended gone from every view, index and credential', async () => {
    const { account } = await withSessions();
    await store.commit({ commands: [account({ type: 'Suspend', now: 4 })] });
    store.syncReads.refresh();
    expect([...store.databases.indexes.accountSessions.getKeys({})]).toEqual([]);
    expect(store.syncReads.credential('session:sess_1')).toBeUndefined();
    expect(differences()).toEqual([]);
  });

  it('names a session missing from the index of sessions by account, and an entry for a session the log never made', async () => {
    const { dbs } = await withSessions();
    dbs.indexes.accountSessions.removeSync(['acct_s', 'sess_1']);
    dbs.indexes.accountSessions.putSync(['acct_s', 'sess_9'], '');
    expect(differences()).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^index accountSessions acct_s.sess_1: produced by the log but not stored/),
        expect.stringMatching(/^index accountSessions acct_s.sess_9: stored but not produced by the log/),
      ]),
    );
  });

  it('builds the index of sessions by account once for a data directory written before it existed', async () => {
    const { dbs } = await withSessions();
    // As an older version left it: sessions, no index, no marker.
    for (const key of [...dbs.indexes.accountSessions.getKeys({})]) dbs.indexes.accountSessions.removeSync(key);
    dbs.meta.removeSync(accountSessionsIndexedKey);
    await store.close();
    store = openLmdbStore(dir);
    expect([...store.databases.indexes.accountSessions.getKeys({})]).toEqual([
      ['acct_s', 'sess_1'],
      ['acct_s', 'sess_2'],
    ]);
    expect(differences()).toEqual([]);
  });
});
