import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

const run = (dir: string, chromium: string, env: Record<string, string> = {}) => {
  const started = performance.now();
  const result = spawnSync(join(dir, 'bash'), [script], {
    env: { PATH: dir, AIRS_CHROMIUM: chromium, ...env },
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

  // Where it may install (root on Debian), it does: a fake apt-get on the PATH records what it is asked and "installs"
  // by making the missing tools, so nothing is installed for real.
  it.skipIf(process.getuid?.() !== 0 || !existsSync('/etc/debian_version'))(
    'as root on Debian, installs what is missing with apt-get (update once, then install -y) and exits 0',
    () => {
      const dir = pathWith();
      const calls = join(dir, 'apt-get.calls');
      const chmod = spawnSync('bash', ['-c', 'command -v chmod'], { encoding: 'utf8' }).stdout.trim();
      writeFileSync(
        join(dir, 'apt-get'),
        [
          `#!${bash}`,
          `echo "$*" >> ${calls}`,
          'if [ "$1" = install ]; then',
          '  shift 2',
          '  for package in "$@"; do',
          `    case "$package" in chromium) made=$AIRS_CHROMIUM ;; *) made=${dir}/$package ;; esac`,
          `    printf '#!/bin/sh\n' > "$made"; ${chmod} 755 "$made"`,
          '  done',
          'fi',
          '',
        ].join('\n'),
      );
      chmodSync(join(dir, 'apt-get'), 0o755);
      const result = run(dir, join(dir, 'chromium'));
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      expect(readFileSync(calls, 'utf8')).toBe('update\ninstall -y strace chromium\n');
    },
  );

  it('is what npm test and .ci/run run first', () => {
    const root = join(script, '..', '..');
    const { scripts } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(scripts.test).toMatch(/^bash \.ci\/system-packages && /);
    expect(readFileSync(join(root, '.ci', 'run'), 'utf8')).toMatch(/^if ! bash \.ci\/system-packages\b/m);
  });
});
