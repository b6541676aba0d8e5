import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
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
    const log = join(dir, 'loaded.txt');
    writeFileSync(
      join(dir, 'hooks.mjs'),
      `import { appendFileSync } from 'node:fs';\nexport async function load(url, context, next) { appendFileSync(${JSON.stringify(log)}, url + '\\n'); return next(url, context); }\n`,
    );
    writeFileSync(
      join(dir, 'register.mjs'),
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(join(dir, 'hooks.mjs')).href)});\n`,
    );
    const listed = spawnSync(
      process.execPath,
      ['--import', pathToFileURL(join(dir, 'register.mjs')).href, binPath, 'accounts', 'list'],
      { env, cwd: dir },
    );
    expect(listed.status).toBe(0);
    const loaded = readFileSync(log, 'utf8');
    expect(loaded).toContain('/lmdb/');
    expect(loaded).toContain('/app/Committer.js');
    expect(loaded).not.toContain('prom-client');
  });
});
