import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, checkModelSecrets, loadConfig, upstreamsOf } from '../../src/config.js';

const dir = mkdtempSync(join(tmpdir(), 'airs-upstreams-'));
const load = (models: unknown[], env: Record<string, string> = {}) => {
  const path = join(dir, `c${Math.random()}.json`);
  writeFileSync(path, JSON.stringify({ models }));
  return () => loadConfig({ AIRS_CONFIG: path, ...env }, dir);
};
const openai = (fields: Record<string, unknown>) => ({ id: 'llama', provider: 'openai', ...fields });
const modelOf = (config: ReturnType<ReturnType<typeof load>>, index = 0) => {
  const model = config.models[index];
  if (model?.provider !== 'openai') throw new Error('expected an openai model');
  return model;
};

describe('A model with several upstreams (contract 19)', () => {
  it('reads the one-baseUrl form as one upstream named 0 that takes the model’s fields and bound', () => {
    const model = modelOf(
      load([openai({ baseUrl: 'http://127.0.0.1:9/v1', upstreamModel: 'm', apiKeyEnv: 'K', maxConcurrency: 7 })])(),
    );
    expect(upstreamsOf(model)).toEqual([
      {
        name: '0',
        baseUrl: 'http://127.0.0.1:9/v1',
        apiKeyEnv: 'K',
        upstreamModel: 'm',
        places: 7,
        weight: 1,
        timeoutMs: 120_000,
      },
    ]);
    expect(model.upstreamFailures).toBe(3);
  });
  it('names upstreams by position, falls back to the model’s fields, and bounds the model by the sum of places', () => {
    const model = modelOf(
      load([
        openai({
          upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
          timeoutMs: 5_000,
          upstreams: [
            { baseUrl: 'http://127.0.0.1:9001/v1', maxConcurrency: 8 },
            { name: 'big', baseUrl: 'http://127.0.0.1:9002/v1', upstreamModel: 'other', weight: 2, timeoutMs: 900 },
          ],
        }),
      ])(),
    );
    expect(model.maxConcurrency).toBe(8 + 16);
    expect(
      upstreamsOf(model).map(({ name, places, weight, upstreamModel, timeoutMs }) => [
        name,
        places,
        weight,
        upstreamModel,
        timeoutMs,
      ]),
    ).toEqual([
      ['0', 8, 1, 'meta-llama/Llama-3.1-8B-Instruct', 5_000],
      ['big', 16, 2, 'other', 900],
    ]);
  });
  it.each([
    [[openai({ upstreamModel: 'm' })], 'models[0].baseUrl (model "llama"): give either baseUrl'],
    [
      [openai({ upstreamModel: 'm', baseUrl: 'http://a/v1', upstreams: [{ baseUrl: 'http://b/v1' }] })],
      'give either baseUrl (one upstream) or upstreams',
    ],
    [
      [openai({ upstreamModel: 'm', upstreams: [{ baseUrl: 'http://a/v1' }, { name: '0', baseUrl: 'http://b/v1' }] })],
      'models[0].upstreams[1].name (model "llama"): upstream name "0" is used twice in this model',
    ],
    [
      [openai({ upstreams: [{ baseUrl: 'http://a/v1' }] })],
      'models[0].upstreams[0].upstreamModel (model "llama"): is required',
    ],
    [[openai({ upstreamModel: 'm', upstreams: [] })], 'models[0].upstreams'],
    [
      [openai({ upstreamModel: 'm', baseUrl: 'http://a/v1', fallbacks: ['llama'] })],
      'a model cannot be its own fallback ("llama")',
    ],
    [
      [openai({ upstreamModel: 'm', baseUrl: 'http://a/v1', fallbacks: ['gpt-4o'] }), { id: 'echo', provider: 'echo' }],
      'models[0].fallbacks[0] (model "llama"): names no configured model ("gpt-4o"; the models are: llama, echo)',
    ],
    [
      [openai({ upstreamModel: 'm', baseUrl: 'http://a/v1', spillAfterSeconds: 5 })],
      'spillAfterSeconds (model "llama"): needs fallbacks',
    ],
    [
      [openai({ upstreamModel: 'm', upstreams: [{ baseUrl: 'http://a/v1', name: 'a b' }] })],
      'models[0].upstreams[0].name',
    ],
  ])('refuses %j with a message naming %s', (models, message) => {
    expect(load(models)).toThrow(ConfigError);
    expect(load(models)).toThrow(message);
  });
  it('accepts fallbacks that name other models', () => {
    const config = load([
      openai({ upstreamModel: 'm', baseUrl: 'http://a/v1', fallbacks: ['hosted'], spillAfterSeconds: 30 }),
      { id: 'hosted', provider: 'echo' },
    ])();
    expect(modelOf(config)).toMatchObject({ fallbacks: ['hosted'], spillAfterSeconds: 30 });
  });
  it('names an upstream’s unset key variable when the server checks its secrets', () => {
    const config = load([
      openai({
        upstreamModel: 'm',
        upstreams: [{ baseUrl: 'http://a/v1' }, { baseUrl: 'http://b/v1', apiKeyEnv: 'AIRS_UP_KEY' }],
      }),
    ])();
    expect(() => checkModelSecrets(config, {})).toThrow(
      /models\[0\]\.upstreams\[1\]\.apiKeyEnv \(model "llama"\): environment variable AIRS_UP_KEY is not set/,
    );
    expect(() => checkModelSecrets(config, { AIRS_UP_KEY: 'k' })).not.toThrow();
  });
});
