import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/adapters/cli/program.js';

/*
 * The README's "Command line" block is the table a new operator reads first: every command `airs --help` knows, with
 * every option of its own, has its line there (the options every store command shares are named once, below it).
 */

const shared = new Set(['--data-dir', '--database-url', '--config', '--help', '--version']);

const commandBlock = (): string[] => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const block = /## Command line\s+```\n([\s\S]*?)```/.exec(readme)?.[1];
  if (block === undefined) throw new Error('README.md has no "Command line" block');
  return block.split('\n').filter((line) => line.startsWith('airs '));
};

/** Every command that runs something (no subcommands of its own), with the names of the commands above it. */
const leaves = (command: Command, path: readonly string[] = []): { path: string[]; command: Command }[] =>
  command.commands.flatMap((sub) =>
    sub.commands.length === 0 ? [{ path: [...path, sub.name()], command: sub }] : leaves(sub, [...path, sub.name()]),
  );

describe('The README command table', () => {
  const lines = commandBlock();
  const all = leaves(buildProgram({ out: () => {}, err: () => {} }));

  it.each(all.map(({ path, command }) => [path.join(' '), command] as const))(
    'has a line for `airs %s` that names each of its own options',
    (name, command) => {
      const words = name.split(' ');
      const parent = words.slice(0, -1).join(' ');
      const leaf = words.at(-1) as string;
      // `airs accounts set-plan ID PLAN | suspend ID | resume ID`: several leaves of one parent may share a line.
      const line = lines.filter((l) =>
        new RegExp(`^airs ${parent === '' ? '' : `${parent} `}(?:[^|]*\\| )*${leaf}(?:\\s|$)`).test(l),
      );
      expect(line, `no line for airs ${name}`).not.toHaveLength(0);
      const own = command.options
        .map((option) => option.long)
        .filter((flag) => flag !== undefined && !shared.has(flag));
      for (const flag of own) expect(line.join('\n'), `airs ${name} ${flag}`).toContain(flag as string);
    },
  );
});
