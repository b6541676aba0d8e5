import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { askExit } from '../../src/adapters/cli/askCommand.js';
import { exitStatuses, exitStatusHelp } from '../../src/adapters/cli/exitStatuses.js';

/**
 * The exit statuses the README and `airs --help` list, checked against the code of src/adapters/cli: every status a
 * command can end with is listed, and every listed status is one the code uses.
 */

const cliDir = resolve(import.meta.dirname, '../../src/adapters/cli');
const sources = readdirSync(cliDir)
  .filter((name) => name.endsWith('.ts'))
  .map((name) => ({ name, text: readFileSync(join(cliDir, name), 'utf8') }));

/** The text of the call whose arguments start at `from` (just after its opening parenthesis), and its arguments at the
 * top level: nested brackets, strings and template literals are skipped over. */
const topLevelArguments = (text: string, from: number): string[] => {
  const args: string[] = [];
  let depth = 0;
  let start = from;
  let quote: string | undefined;
  for (let i = from; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== undefined) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
      else if (quote === '`' && c === '$' && text[i + 1] === '{') {
        // A template's placeholder: skip to its closing brace.
        let inner = 0;
        for (i += 1; i < text.length; i++) {
          if (text[i] === '{') inner++;
          else if (text[i] === '}' && --inner === 0) break;
        }
      }
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) {
      if (depth === 0) {
        args.push(text.slice(start, i).trim());
        return args.filter((arg) => arg !== '');
      }
      depth--;
    } else if (c === ',' && depth === 0) {
      args.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  throw new Error('unbalanced call');
};

/** Every status the CLI's code can end with, and where. */
const statusesInCode = (): Map<number, string[]> => {
  const found = new Map<number, string[]>();
  const add = (status: number, where: string) => found.set(status, [...(found.get(status) ?? []), where]);
  for (const { name, text } of sources) {
    for (const match of text.matchAll(/new CliError\(/g)) {
      const args = topLevelArguments(text, (match.index ?? 0) + match[0].length);
      const last = args[1];
      if (last === undefined) add(1, `${name}: CliError without a status`);
      else if (/^\d+$/.test(last)) add(Number(last), `${name}: CliError(…, ${last})`);
      else if (/^askExit\.\w+$/.test(last))
        add(askExit[last.slice('askExit.'.length) as keyof typeof askExit], `${name}: ${last}`);
      // Any other expression (a variable) is one of askExit's values, checked below.
    }
    for (const match of text.matchAll(/process\.exit\((\d+)\)/g)) add(Number(match[1]), `${name}: ${match[0]}`);
  }
  for (const [key, status] of Object.entries(askExit)) add(status, `askCommand.ts: askExit.${key}`);
  // program.ts: commander's usage errors, the data directory's problems, and an unexpected failure.
  const program = sources.find(({ name }) => name === 'program.ts')?.text ?? '';
  for (const match of program.matchAll(/return (\d+);/g)) add(Number(match[1]), `program.ts: ${match[0]}`);
  return found;
};

const readmeTable = (): Array<[number, string, string]> => {
  const readme = readFileSync(resolve(import.meta.dirname, '../../README.md'), 'utf8');
  const from = readme.indexOf('Exit statuses (');
  const rows = readme
    .slice(from)
    .split('\n')
    .slice(1)
    .filter((line) => /^\| \d+ \|/.test(line));
  return rows.map((row) => {
    const [status, commands, meaning] = row
      .slice(2, -2)
      .split(/ (?<!\\)\| /)
      .map((cell) => cell.replaceAll('`', '').replaceAll('\\|', '|'));
    return [Number(status), commands as string, meaning as string];
  });
};

describe('exit statuses', () => {
  it('every status the CLI code can end with is listed, and every listed one is used', () => {
    const used = statusesInCode();
    const listed = exitStatuses.map(([status]) => status);
    for (const [status, where] of used) expect(listed, `status ${status} (${where.join('; ')})`).toContain(status);
    for (const status of listed) if (status !== 0) expect(used.has(status), `status ${status} is listed`).toBe(true);
  });

  it('the README lists them as --help does, row for row', () => {
    expect(readmeTable()).toEqual(
      exitStatuses.map(([status, commands, meaning]) => [status, commands, meaning.replaceAll('`', '')]),
    );
    const help = exitStatusHelp();
    for (const [status] of exitStatuses) expect(help).toMatch(new RegExp(`\\n  ${status} +\\S`));
  });
});
