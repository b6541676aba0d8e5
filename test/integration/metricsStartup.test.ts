import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sourcesLoadedBy } from '../support/loadedSources.js';
import { binPath } from '../support/processes.js';

/** prom-client costs 50-80 ms to load: the server loads it, a management command (which shares the committer and its
 * metrics hook) must not. Built code, as `npm test` builds first. */
describe('metrics at start-up', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-metrics-startup-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a management command does not load prom-client', () => {
    const env = { ...process.env, AIRS_DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'silent' };
    const created = spawnSync(process.execPath, [binPath, 'accounts', 'create', '--email', 'm@example.com'], {
      env,
      cwd: dir,
    });
    expect(created.status).toBe(0);
    const loaded = sourcesLoadedBy(['accounts', 'list'], { env, cwd: dir }).join('\n');
    expect(loaded).toContain('/lmdb/');
    expect(loaded).toContain('/app/Committer.');
    expect(loaded).not.toContain('prom-client');
  });
});
