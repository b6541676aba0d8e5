/**
 * A webhook endpoint for an account of a bench sandbox, made before its server starts: with `airs webhooks add`, the
 * way users add one; where the built CLI has no `webhooks` command yet, by committing the same command through the
 * store (addWebhookEndpoint.ts). Which way was taken is returned, for the report.
 */
import type { Sandbox } from './airs.js';
import { airsBin, script } from './paths.js';
import { runChild } from './processes.js';

export type AddedEndpoint = { readonly id: string; readonly url: string; readonly via: 'cli' | 'store' };

const lastJsonLine = (stdout: string) => {
  const line = stdout.trim().split('\n').pop() ?? '';
  return line.startsWith('{') ? (JSON.parse(line) as { id: string }) : undefined;
};

export const addWebhookEndpoint = async (box: Sandbox, accountId: string, url: string): Promise<AddedEndpoint> => {
  const options = { env: box.env, cwd: box.dir, timeoutMs: 60_000 };
  const cli = await runChild(
    'airs-cli',
    process.execPath,
    [airsBin, 'webhooks', 'add', '--account', accountId, '--url', url, '--json'],
    options,
  );
  const added = cli.exit.code === 0 ? lastJsonLine(cli.stdout) : undefined;
  if (added !== undefined) return { id: added.id, url, via: 'cli' };
  // Only a CLI without the command falls back; any other refusal is the bench's failure.
  if (!/unknown command 'webhooks'/.test(cli.stderr))
    throw new Error(`airs webhooks add exited ${cli.exit.code ?? cli.exit.signal}: ${cli.stderr.trim()}`);
  const viaStore = await runChild(
    'add-webhook-endpoint',
    process.execPath,
    [script('addWebhookEndpoint'), JSON.stringify({ accountId, url })],
    options,
  );
  const stored = viaStore.exit.code === 0 ? lastJsonLine(viaStore.stdout) : undefined;
  if (stored === undefined) throw new Error(`adding a webhook endpoint through the store failed: ${viaStore.stderr}`);
  return { id: stored.id, url, via: 'store' };
};
