import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { binPath } from '../support/processes.js';

const script = join(binPath, '..', '..', '..', '..', '..', '.ci', 'system-packages');
const bash = spawnSync('bash', ['-c', 'command -v bash'], { encoding: 'utf8' }).stdout.trim();

/** A PATH of its own: bash, and whichever fake tools are named; no apt-get, so nothing is ever installed here. */
const bins: string[] = [];
afterAll(() => {
  for (const dir of bins) rmSync(dir, { recursive: true, force: true });
});
const pathWith = (...tools: string[]) => {
  const dir = mkdtempSync(join(tmpdir(), 'airs-syspkg-'));
  bins.push(dir);
  symlinkSync(bash, join(dir, 'bash'));
  for (const tool of tools) {
    writeFileSync(join(dir, tool), '#!/bin/sh\n');
    chmodSync(join(dir, tool), 0o755);
  }
  return dir;
};

const run = (dir: string, chromium: string) => {
  const started = performance.now();
  const result = spawnSync(join(dir, 'bash'), [script], {
    env: { PATH: dir, AIRS_CHROMIUM: chromium },
    encoding: 'utf8',
  });
  return { ...result, ms: performance.now() - started };
};

describe('.ci/system-packages (run by npm test and .ci/run)', () => {
  it('with every tool the tests need present, prints nothing and exits 0', () => {
    const dir = pathWith('strace', 'chromium');
    const result = run(dir, join(dir, 'chromium'));
    expect(result.stderr + result.stdout).toBe('');
    expect(result.status).toBe(0);
    console.log(`system-packages with everything present: ${result.ms.toFixed(1)} ms`);
  });

  it('with tools missing where it may not install them, stops at once with one line giving the exact command, exit 1', () => {
    const dir = pathWith();
    const result = run(dir, join(dir, 'no-chromium'));
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /the tests need strace chromium, which are missing; install them with: .*apt-get install -y strace chromium/,
    );

    const one = run(pathWith('strace'), '/nonexistent/chromium');
    expect(one.status).toBe(1);
    expect(one.stderr).toMatch(/the tests need chromium, which are missing; .*apt-get install -y chromium\n$/);
  });
});
