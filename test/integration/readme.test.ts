import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { binPath, killChildren, sandbox, startServer } from '../support/processes.js';

const root = join(binPath, '..', '..', '..', '..', '..');
const readme = readFileSync(join(root, 'README.md'), 'utf8');

/** The first block of a language after a heading, exactly as a reader would paste it. */
const blockAfter = (heading: string, language = 'sh') => {
  const from = readme.indexOf(heading);
  const match = new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``).exec(readme.slice(from));
  if (from < 0 || match?.[1] === undefined) throw new Error(`no ${language} block after ${heading}`);
  return match[1];
};
const shellBlockAfter = (heading: string) => blockAfter(heading, 'sh');

describe('The README', () => {
  const box = sandbox('airs-readme');
  const boxes = [box];
  afterAll(async () => {
    await killChildren();
    for (const each of boxes) each.remove();
  });

  it('quick start works as written against a running server', async () => {
    const server = await startServer(box);
    // The one liberty taken: the test server listens on a free port rather than 8080.
    const script = shellBlockAfter('## Quick start').replaceAll('http://127.0.0.1:8080', server.url);
    const { stdout } = await promisify(execFile)('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: root,
      // The first `npx airs` in a checkout installs it into npx's cache, which runs its `prepare` (the build) in this
      // checkout: dist/ rewritten while other test files run the CLI from it, one of which then found a module half
      // written. The tests run what `npm test` built; npx here runs no scripts.
      env: { ...box.env(), npm_config_ignore_scripts: 'true' },
      timeout: 60_000,
    });
    const lines = stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^req_[A-Za-z0-9_-]{22,}$/);
    expect(JSON.parse(lines.at(-1) ?? '')).toEqual({
      req_id: lines[0],
      status: 'completed',
      model: 'echo',
      response: 'Hello, airs',
      created_at: expect.any(Number),
      completed_at: expect.any(Number),
      service_tier: 'default',
      // echo counts words, as the README says in its comment.
      usage: { input_tokens: 2, output_tokens: 2, total_tokens: 4 },
    });
  }, 90_000);

  it('OpenAI SDK examples (responses; chat completions and streams) run as written with the official openai package against a running server', async () => {
    const sdkBox = sandbox('airs-readme-sdk');
    boxes.push(sdkBox);
    const server = await startServer(sdkBox);
    const run = promisify(execFile);
    const json = async (args: string[]) =>
      JSON.parse((await run(process.execPath, [binPath, ...args, '--json'], { env: sdkBox.env() })).stdout) as {
        id: string;
        key: string;
      };
    const account = await json(['accounts', 'create', '--email', 'sdk-readme@example.com']);
    const key = await json(['keys', 'create', '--account', account.id]);
    // Saved where a reader's project would have `openai` installed: beside this checkout's node_modules.
    const script = join(root, 'dist', 'readme-openai-example.mjs');
    writeFileSync(script, blockAfter('## Use the OpenAI SDK', 'js').replaceAll('http://127.0.0.1:8080', server.url));
    const { stdout } = await run(process.execPath, [script], {
      env: { ...process.env, AIRS_API_KEY: key.key },
      timeout: 60_000,
    });
    expect(stdout.trim().split('\n')).toEqual([
      'Hello, airs',
      'What is a queue?',
      'cancelled',
      "[ 'echo', 'echo-slow' ]",
    ]);

    // The chat completions and streams example, with the same key.
    const chatScript = join(root, 'dist', 'readme-chat-example.mjs');
    writeFileSync(
      chatScript,
      blockAfter('Chat completions (the default of most libraries)', 'js').replaceAll(
        'http://127.0.0.1:8080',
        server.url,
      ),
    );
    const chat = await run(process.execPath, [chatScript], {
      env: { ...process.env, AIRS_API_KEY: key.key },
      timeout: 60_000,
    });
    expect(chat.stdout.trim().split('\n')).toEqual([
      'What is a queue?',
      '{ prompt_tokens: 6, completion_tokens: 4, total_tokens: 10 }',
      'Hello, stream',
      'Hello, events',
    ]);

    // The batch example: it writes prompts.jsonl where it runs, so it runs in the sandbox.
    const batchScript = join(root, 'dist', 'readme-batch-example.mjs');
    writeFileSync(batchScript, blockAfter('## Batches', 'js').replaceAll('http://127.0.0.1:8080', server.url));
    const batch = await run(process.execPath, [batchScript], {
      cwd: sdkBox.dir,
      env: { ...process.env, AIRS_API_KEY: key.key },
      timeout: 60_000,
    });
    expect(batch.stdout.trim().split('\n')).toEqual([
      'completed { total: 3, completed: 3, failed: 0 }',
      'blue Name a blue fruit',
      'green Name a green fruit',
      'red Name a red fruit',
    ]);
  }, 120_000);
});
