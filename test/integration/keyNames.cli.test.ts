import { afterAll, describe, expect, it } from 'vitest';
import { cliJson, runCli, sandbox } from '../support/processes.js';

type KeyJson = { id: string; key?: string; name: string | null; prefix: string };

describe('airs keys create --name', () => {
  const box = sandbox('airs-key-names');
  afterAll(() => box.remove());

  it('names the key; keys list shows the name (and null for a key without one)', async () => {
    const account = await cliJson<{ id: string }>(box, [
      'accounts',
      'create',
      '--email',
      'names@example.com',
      '--plan',
      'scale',
    ]);
    const named = await cliJson<KeyJson>(box, ['keys', 'create', '--account', account.id, '--name', ' CI pipeline ']);
    expect(named.name).toBe('CI pipeline');
    const plain = await runCli(box, ['keys', 'create', '--account', account.id]);
    expect(plain.code).toBe(0);
    expect(plain.stdout.split('\n')[0]).toMatch(/^sk_/);

    const listed = await cliJson<KeyJson[]>(box, ['keys', 'list', '--account', account.id]);
    expect(listed.map((key) => key.name).sort()).toEqual(['CI pipeline', null].sort());
    const lines = await runCli(box, ['keys', 'list', '--account', account.id]);
    expect(lines.code).toBe(0);
    const namedLine = lines.stdout.split('\n').find((line) => line.startsWith(named.id));
    expect(namedLine).toContain('"CI pipeline"');
  });

  it('refuses a name of more than 100 characters in one line, creating nothing', async () => {
    const account = await cliJson<{ id: string }>(box, ['accounts', 'create', '--email', 'long@example.com']);
    const result = await runCli(box, ['keys', 'create', '--account', account.id, '--name', 'x'.repeat(101)]);
    expect(result.code).not.toBe(0);
    expect(result.stdout).toBe('');
    expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/at most 100 characters/);
    expect(await cliJson<KeyJson[]>(box, ['keys', 'list', '--account', account.id])).toEqual([]);
  });
});
