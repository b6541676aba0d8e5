import { describe, expect, it } from 'vitest';
import { createAccountWithKey, fileSandboxes, runCli, startServer, submit } from '../support/processes.js';

const newBox = fileSandboxes();

/** Runs the command into `reader` (a shell pipeline) with pipefail: the status is airs's own unless it is 0. */
const into = (reader: string) => ['/bin/bash', '-o', 'pipefail', '-c', `"$@" | ${reader}`, 'bash'];

describe('a CLI command whose reader stops reading', { timeout: 90_000 }, () => {
  it('airs replay | head -1 ends quietly: the first line, nothing on stderr, exit 0 (also with --json)', async () => {
    const box = newBox('airs-pipe');
    const { key } = await createAccountWithKey(box, 'pipe@example.com', 'enterprise');
    const server = await startServer(box);
    // Far more output than a pipe holds (64 KiB), so airs is still writing when head has gone.
    for (let round = 0; round < 10; round++)
      await Promise.all(Array.from({ length: 50 }, (_, i) => submit(server.url, key, 'echo', `line ${round} ${i}`)));
    expect(await server.stop('SIGTERM')).toBe(0);
    const whole = await runCli(box, ['replay']);
    expect(whole.stdout.length).toBeGreaterThan(256 * 1024);

    for (const [args, reader] of [
      [['replay'], 'head -1'],
      [['replay', '--json'], 'head -c 100'],
    ] as const) {
      const result = await runCli(box, args, { wrapper: into(reader) });
      expect(result.stderr, args.join(' ')).toBe('');
      expect(result.code, args.join(' ')).toBe(0);
      const expected =
        reader === 'head -1' ? `${whole.stdout.split('\n')[0]}\n` : (await runCli(box, args)).stdout.slice(0, 100);
      expect(result.stdout).toBe(expected);
    }
  });
});
