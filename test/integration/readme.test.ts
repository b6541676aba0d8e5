import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { binPath, killChildren, sandbox, startServer } from '../support/processes.js';

const root = join(binPath, '..', '..', '..', '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The first shell block after a heading, exactly as a reader would paste it. */
const shellBlockAfter = (heading: string) => {
  const from = readme.indexOf(heading);
  const match = /```sh\n([\s\S]*?)```/.exec(readme.slice(from));
  if (from < 0 || match?.[1] === undefined) throw new Error(`no shell block after ${heading}`);
  return match[1];
};

describe('The README', () => {
  const box = sandbox('airs-readme');
  afterAll(async () => {
    await killChildren();
    box.remove();
  });

  it('quick start works as written against a running server', async () => {
    const server = await startServer(box);
    // The one liberty taken: the test server listens on a free port rather than 8080.
    const script = shellBlockAfter('## Quick start').replaceAll('http://127.0.0.1:8080', server.url);
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: root,
      env: box.env(),
      timeout: 60_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^req_[A-Za-z0-9_-]{22,}$/);
    expect(JSON.parse(lines.at(-1) ?? '')).toEqual({
      req_id: lines[0],
      status: 'completed',
      model: 'echo',
      response: 'Hello, airs',
    });
  }, 90_000);
});
