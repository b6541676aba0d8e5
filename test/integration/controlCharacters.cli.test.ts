import { describe, expect, it } from 'vitest';
import { storeOldAccount } from '../support/lmdbData.js';
import { cliJson, fileSandboxes, runCli } from '../support/processes.js';

/**
 * Control characters never reach the operator's terminal (product contract 15): emails that hold them are refused,
 * and what older versions stored is printed with each control character written out (`\x1b`), never raw.
 */

const newBox = fileSandboxes();
/** Clears the screen, rings the bell, and a C1 CSI (one code point) that turns text red. */
const evilEmail = 'evil\u001b[2J\u0007\u009b31m@example.com';
/** Any control character but the line feed that ends each line. */
const rawControl = /(?!\n)\p{Cc}/u;

describe('control characters and the operator’s terminal', { timeout: 60_000 }, () => {
  it('`accounts create` refuses an email with control characters in one line that holds none of them', async () => {
    const box = newBox('airs-cc-create');
    const refused = await runCli(box, ['accounts', 'create', '--email', evilEmail]);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(
      'airs: an email address must not contain control characters (escape sequences, line breaks, tabs)\n',
    );
    expect(await cliJson(box, ['accounts', 'list'])).toEqual([]);
  });

  it('`accounts list` and `replay` write stored control characters out visibly, never raw; --json escapes them too', async () => {
    const box = newBox('airs-cc-old');
    await cliJson(box, ['accounts', 'create', '--email', 'plain@example.com']);
    await storeOldAccount(box.dataDir, evilEmail);
    const shown = 'evil\\x1b[2J\\x07\\x9b31m@example.com';
    for (const args of [['accounts', 'list'], ['replay'], ['replay', '--account', 'acct_old']]) {
      const result = await runCli(box, args);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout, args.join(' ')).toContain(shown);
      expect(result.stdout, args.join(' ')).not.toMatch(rawControl);
    }
    const json = await runCli(box, ['accounts', 'list', '--json']);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toMatch(rawControl);
    expect((JSON.parse(json.stdout) as { email: string }[]).map((account) => account.email)).toContain(evilEmail);
    // The account written as the store writes it: the log still verifies.
    expect((await runCli(box, ['replay', '--verify'])).code).toBe(0);
  });
});
