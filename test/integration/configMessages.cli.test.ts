import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { fileSandboxes, runCli } from '../support/processes.js';

/**
 * What `airs serve` says of a config it cannot use, in the words of the person who wrote the file: the field as it
 * reads there, "is required", "did you mean" for a mistyped key, and for a data directory that is a file, the setting
 * that was used. Each is one exact line on stderr and exit 2.
 */

const newBox = fileSandboxes();

/** Runs `airs serve` with `config` as its `--config` file (and `args`); gives its exit status, stdout and stderr. */
const serveWith = async (config: unknown, args: readonly string[] = [], env: Record<string, string> = {}) => {
  const box = newBox('airs-config-words');
  const path = join(box.dir, 'airs.json');
  writeFileSync(path, JSON.stringify(config));
  const result = await runCli(box, ['serve', '--config', path, ...args], { env: { PORT: '0', ...env } });
  return { ...result, path, dir: box.dir };
};

describe('A config that cannot be used, said in words', { timeout: 60_000 }, () => {
  it.each([
    ['a mistyped key at the top', { modles: [] }, 'modles: unknown key (did you mean "models"?)'],
    [
      'a mistyped key in a section',
      { processing: { concurency: 4 } },
      'processing.concurency: unknown key (did you mean "concurrency"?)',
    ],
    [
      'a key of one model in the wrong case',
      { models: [{ id: 'fast', provider: 'echo', delayMS: 5 }] },
      'models[0].delayMS (model "fast"): unknown key (did you mean "delayMs"?)',
    ],
    ['an unknown key like no known one', { colour: 'blue' }, 'colour: unknown key'],
    [
      'a missing field of a model',
      { models: [{ id: 'gpt', provider: 'openai', baseUrl: 'http://127.0.0.1:9/v1' }] },
      'models[0].upstreamModel (model "gpt"): is required',
    ],
    [
      'a model without a provider',
      { models: [{ id: 'echo', provider: 'echo' }, { id: 'plain' }] },
      'models[1].provider (model "plain"): is required (this version supports: echo, openai)',
    ],
    [
      'a field airs sets itself in a model’s passThrough',
      {
        models: [
          {
            id: 'vllm',
            provider: 'openai',
            baseUrl: 'http://127.0.0.1:9/v1',
            upstreamModel: 'llama',
            passThrough: ['top_k', 'messages'],
          },
        ],
      },
      'models[0].passThrough[1] (model "vllm"): "messages" is a field airs sets or checks itself; it cannot be passed through',
    ],
  ])('%s is one line naming the field as the file has it, exit 2', async (_, config, words) => {
    const result = await serveWith(config);
    expect(result.stderr).toBe(`airs: bad configuration: config file ${result.path}: ${words}\n`);
    expect(result.stdout).toBe('');
    expect(result.code).toBe(2);
  });

  it('a data directory that is a file names the setting that was used: the flag, else the variable, else the key', async () => {
    // The same file for each: `afile` in the sandbox the command runs in. (An empty AIRS_DATA_DIR counts as unset.)
    const cases: Array<[Record<string, unknown>, readonly string[], Record<string, string>, string, string]> = [
      [{}, ['--data-dir', 'afile'], { AIRS_DATA_DIR: 'elsewhere' }, 'afile', '--data-dir'],
      [{ dataDir: 'elsewhere' }, [], { AIRS_DATA_DIR: 'afile' }, 'afile', 'AIRS_DATA_DIR'],
      [{ dataDir: 'afile/data' }, [], { AIRS_DATA_DIR: '' }, 'afile/data', 'dataDir in CONFIG'],
      [{ dataDir: 'afile' }, ['--processes', '2'], { AIRS_DATA_DIR: '' }, 'afile', 'dataDir in CONFIG'],
    ];
    for (const [config, args, env, dataDir, setting] of cases) {
      const box = newBox('airs-config-datadir');
      writeFileSync(join(box.dir, 'afile'), 'not a directory');
      const path = join(box.dir, 'airs.json');
      writeFileSync(path, JSON.stringify(config));
      const result = await runCli(box, ['serve', '--config', path, ...args], { env: { PORT: '0', ...env } });
      const named = setting.replace('CONFIG', path);
      expect(result.stderr).toBe(
        `airs: the data directory ${join(box.dir, dataDir)} cannot be used: ${join(box.dir, 'afile')} is a file, not a directory (data directory from ${named}); set ${named} to a directory\n`,
      );
      expect(result.code).toBe(2);
    }
  });
});
