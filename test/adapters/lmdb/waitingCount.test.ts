import { describe, expect, it } from 'vitest';
import { openDatabases } from '../../../src/adapters/lmdb/databases.js';
import type { LmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { waitingCountKey } from '../../../src/adapters/lmdb/migrations.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { ModelConfig } from '../../../src/config.js';
import { lmdbViewDifferences } from '../../support/lmdbData.js';
import { submit } from '../../support/submit.js';
import { type TestApp, testApps } from '../../support/testApp.js';

/** A model that never answers within these tests: its requests stay processing or waiting. */
const stuck: ModelConfig = { id: 'stuck', provider: 'echo', delayMs: 600_000, timeoutMs: 600_000 };
const config = { models: [stuck], processing: { concurrency: 1, maxAttempts: 3 } };

const waiter = { model: 'stuck', prompt: 'wait for me' };

const waitingCount = (app: TestApp) => (app.store as LmdbStore).databases.meta.get(waitingCountKey);

describe('The count of waiting requests the LMDB store keeps beside its dispatch index', () => {
  const start = testApps();

  it('follows the requests that wait, start, are cancelled, and is checked by verify', async () => {
    const app = await start({ store: 'lmdb', config });
    const account = await app.account('free');
    // One worker: the first starts at once, the others wait behind it.
    const ids = [
      await submit(app, account.key, waiter),
      await submit(app, account.key, waiter),
      await submit(app, account.key, waiter),
    ];
    expect(waitingCount(app)).toBe(2);
    await app.requests.cancel({ accountId: account.accountId, keyId: account.keyId, plan: 'free' }, ids[2] as string);
    expect(waitingCount(app)).toBe(1);
    expect(lmdbViewDifferences(app)).toEqual([]);
    await app.close();
    // A count that went wrong is found.
    const databases = openDatabases(app.dataDir);
    await databases.meta.put(waitingCountKey, 5);
    expect(verifyViews(databases).differences).toEqual(['meta waiting: stored 5 but the log gives 2']);
    await databases.root.close();
  });

  it('counts the waiting requests of a data directory written before the count existed, at its first open', async () => {
    const app = await start({ store: 'lmdb', config });
    const account = await app.account('free');
    for (let i = 0; i < 3; i++) await submit(app, account.key, waiter);
    await app.close();
    // As an older airs left it: no count.
    // Closed cleanly, the one that was processing was given back: all three wait.
    const old = openDatabases(app.dataDir);
    await old.meta.remove(waitingCountKey);
    expect(verifyViews(old).differences).toEqual(['meta waiting: stored 0 but the log gives 3']);
    await old.root.close();

    const reopened = openDatabases(app.dataDir);
    expect(reopened.meta.get(waitingCountKey)).toBe(3);
    expect(verifyViews(reopened).differences).toEqual([]);
    await reopened.root.close();
  });
});
