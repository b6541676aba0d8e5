import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openDatabases } from '../../src/adapters/lmdb/databases.js';
import { hourlyUsageCountedKey, hourlyUsageRowsOf } from '../../src/adapters/lmdb/hourlyUsage.js';
import { verifyViews } from '../../src/adapters/lmdb/verify.js';
import { hourlyUsageMigration } from '../../src/adapters/postgres/hourlyUsage.js';
import { migrations } from '../../src/adapters/postgres/schema.js';
import type { UsageRange } from '../../src/ports/Store.js';
import { keyText } from '../../src/storage/verifyReport.js';
import { submit } from '../support/submit.js';
import { type TestApp, testApps } from '../support/testApp.js';

const everything: UsageRange = { fromHour: 0, toHour: 8_640_000_000_000_000, limit: 1000 };

/** Completes requests of two models for two accounts; returns the view's rows as the store wrote them. */
const used = async (app: TestApp) => {
  const a = await app.account('scale');
  const b = await app.account('scale');
  await submit(app, a.key, { prompt: 'one two three' });
  await submit(app, a.key, { prompt: 'four' });
  await submit(app, b.key, { prompt: 'five six' });
  await app.processor.idle();
  const rows = await app.store.reads.usageRows(everything);
  expect(rows.reduce((n, row) => n + row.requests, 0)).toBe(3);
  return rows;
};

describe('The hourly usage view of a store written before it existed', () => {
  const start = testApps();

  it('is counted from the request records at the first open of an LMDB data directory, once', async () => {
    const app = await start({ store: 'lmdb' });
    const rows = await used(app);
    await app.close();
    // As an older airs left it: completed requests, no rows, no marker.
    const old = openDatabases(app.dataDir);
    await old.root.transaction(() => {
      for (const { key } of old.hourlyUsage.getRange({})) old.hourlyUsage.remove(key);
      old.meta.remove(hourlyUsageCountedKey);
    });
    // replay --verify finds the rows the log gives missing.
    expect([...verifyViews(old).differences].sort()).toEqual(
      rows
        .map(
          (row) => `hourly usage ${keyText([row.hour, row.accountId, row.model])}: produced by the log but not stored`,
        )
        .sort(),
    );
    await old.root.close();

    const reopened = openDatabases(app.dataDir);
    expect(hourlyUsageRowsOf(reopened)(everything)).toEqual(rows);
    expect(reopened.meta.get(hourlyUsageCountedKey)).toBe(1);
    expect(verifyViews(reopened).differences).toEqual([]);
    await reopened.root.close();
  });

  it('is counted from the request rows by the PostgreSQL migration that makes it', async () => {
    const app = await start({ store: 'postgres' });
    const rows = await used(app);
    await app.stop({ keepData: true });
    if (app.testStore.kind !== 'postgres') throw new Error('expected PostgreSQL');
    // As an older airs left it: the schema of the version before the table (the later migrations run again over
    // themselves).
    const client = new pg.Client({ connectionString: app.testStore.url });
    await client.connect();
    const { rows: versions } = await client.query<{ version: number }>('SELECT version FROM airs_schema_version');
    await client.query('DROP TABLE usage_hourly');
    await client.query('UPDATE airs_schema_version SET version = $1', [migrations.indexOf(hourlyUsageMigration)]);
    await client.end();

    const reopened = await start({ storeOf: app });
    expect(await reopened.store.reads.usageRows(everything)).toEqual(rows);
    const again = new pg.Client({ connectionString: app.testStore.url });
    await again.connect();
    expect((await again.query('SELECT version FROM airs_schema_version')).rows).toEqual(versions);
    await again.end();
  });
});
