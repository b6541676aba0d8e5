import { randomBytes } from 'node:crypto';
import { closeSync, openSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { killChildren, runCli, type Sandbox, sandbox } from '../support/processes.js';

const boxes: Sandbox[] = [];
afterAll(async () => {
  await killChildren();
  for (const box of boxes) box.remove();
});

const overwrite = (file: string, bytes: Buffer, at = 0) => {
  const fd = openSync(file, 'r+');
  try {
    writeSync(fd, bytes, 0, bytes.length, at);
  } finally {
    closeSync(fd);
  }
};

/** Ways a data file gets damaged: a disk filling mid-copy, a bad restore, a stray `dd`, `: > airs.mdb`. */
const damages: Array<[string, (file: string) => void, RegExp]> = [
  ['truncated to two pages', (file) => truncateSync(file, 8_192), /its header says it uses/],
  ['cut to half its size', (file) => truncateSync(file, Math.floor(statSync(file).size / 2)), /bytes, its header says/],
  ['with its header zeroed', (file) => overwrite(file, Buffer.alloc(8_192)), /not an LMDB header/],
  [
    'with its header overwritten',
    (file) => overwrite(file, randomBytes(200)),
    /not an LMDB header|LMDB version|page size/,
  ],
  ['with its second meta page overwritten', (file) => overwrite(file, randomBytes(200), 4_096), /second meta page/],
  ['emptied', (file) => truncateSync(file, 0), /it is empty, and this directory held a database/],
  ['deleted', (file) => rmSync(file), /it is missing, and this directory held a database/],
];

describe('a damaged data file', { timeout: 90_000 }, () => {
  it.each(damages)(
    '%s: serve and the CLI exit 2 with one line naming the file and saying to restore, never by a signal',
    async (_, damage, why) => {
      const box = sandbox('airs-damaged');
      boxes.push(box);
      const created = await runCli(box, ['accounts', 'create', '--email', 'kept@example.com']);
      expect(created.code, created.stderr).toBe(0);
      const file = join(box.dataDir, 'airs.mdb');
      damage(file);
      for (const args of [['accounts', 'list'], ['replay', '--verify'], ['serve']]) {
        const result = await runCli(box, args, { env: { PORT: '0' }, timeoutMs: 20_000 });
        expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(2);
        expect(result.stdout).toBe('');
        expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
        expect(result.stderr).toContain(file);
        expect(result.stderr).toMatch(why);
        expect(result.stderr).toMatch(/restore the data directory from a backup/);
      }
    },
  );

  it('a directory that never held a database is a first start, not damage', async () => {
    const box = sandbox('airs-fresh');
    boxes.push(box);
    const created = await runCli(box, ['accounts', 'create', '--email', 'first@example.com']);
    expect(created.code, created.stderr).toBe(0);
    const listed = await runCli(box, ['accounts', 'list']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('first@example.com');
  });
});
