import { describe, expect, it } from 'vitest';
import { configChanges } from '../../src/app/configChanges.js';
import { createLiveConfig } from '../../src/app/LiveConfig.js';
import { reloadableModels } from '../../src/app/reloadableModels.js';
import { type Config, defaultConfig, type ModelConfig } from '../../src/config.js';
import type { ModelProvider } from '../../src/ports/ModelProvider.js';

const echo = (id: string, delayMs = 0): ModelConfig => ({ id, provider: 'echo', delayMs, timeoutMs: 60_000 });

const withModels = (config: Config, models: readonly ModelConfig[]): Config => ({ ...config, models });

describe('what a config reload finds (contract 19)', () => {
  it('names the models added, removed and changed, and the plans whose limits changed', () => {
    const before = withModels(defaultConfig(), [echo('kept'), echo('changed'), echo('gone')]);
    const after: Config = {
      ...withModels(before, [echo('kept'), echo('changed', 5), echo('new')]),
      plans: { ...before.plans, free: { ...before.plans.free, maxQueued: 7 } },
    };
    expect(configChanges(before, after)).toEqual({
      added: ['new'],
      removed: ['gone'],
      changed: ['changed'],
      plans: ['free'],
      needRestart: [],
    });
  });

  it('names each other setting that differs by its path, and never its value', () => {
    const before = defaultConfig();
    const after: Config = {
      ...before,
      port: 9999,
      store: { url: 'postgres://user:secret@db/airs', urlFrom: 'AIRS_DATABASE_URL' },
      processing: { ...before.processing, maxAttempts: 9 },
      webhooks: { ...before.webhooks, retentionHours: 1 },
      source: '/elsewhere.json',
    };
    const changes = configChanges(before, after);
    expect(changes.needRestart).toEqual(['port', 'store.url', 'processing.maxAttempts', 'webhooks.retentionHours']);
    expect(JSON.stringify(changes)).not.toContain('secret');
  });
});

describe('the models of a live config', () => {
  it('keep the provider of an unchanged model, make one for an added or changed model, and drop a removed one', () => {
    const live = createLiveConfig(withModels(defaultConfig(), [echo('kept'), echo('changed'), echo('gone')]));
    let made = 0;
    const models = reloadableModels(live, () => ({ id: ++made }) as unknown as ModelProvider);
    const kept = models.get('kept');
    const changed = models.get('changed');
    live.apply(withModels(live.config, [echo('kept'), echo('changed', 5), echo('new')]));
    expect(models.ids()).toEqual(['kept', 'changed', 'new']);
    expect(models.get('kept')).toBe(kept);
    expect(models.get('changed')?.provider).not.toBe(changed?.provider);
    expect(models.get('gone')).toBeUndefined();
    expect(made).toBe(5);
    // What the services read through the live config follows too.
    expect(live.config.models.map((model) => model.id)).toEqual(['kept', 'changed', 'new']);
  });
});
