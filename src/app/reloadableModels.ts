import type { ModelConfig } from '../config.js';
import type { ModelProvider } from '../ports/ModelProvider.js';
import type { LiveConfigShape } from './LiveConfig.js';

// Models.ts's shapes, spelt out here: Models.ts builds its layer with this file, which must not import it back.
type Model = { readonly config: ModelConfig; readonly provider: ModelProvider };
type ModelsShape = { get(id: string): Model | undefined; ids(): readonly string[] };

/**
 * The models of the live config, made again at each reload: a model whose config is unchanged keeps its provider (and
 * whatever that holds: connections, an upstream's state); an added or changed one gets a new provider; a removed one
 * is gone for new work. A call in flight holds the `Model` it started with, so it ends on the provider it began on.
 */
export const reloadableModels = (
  live: LiveConfigShape,
  createProvider: (config: ModelConfig) => ModelProvider,
): ModelsShape => {
  const build = (configs: readonly ModelConfig[], before: ReadonlyMap<string, Model>) => {
    const byId = new Map<string, Model>();
    for (const config of configs) {
      const kept = before.get(config.id);
      // Configs are plain JSON from the file: equal text, equal config.
      const same = kept !== undefined && JSON.stringify(kept.config) === JSON.stringify(config);
      byId.set(config.id, same ? kept : { config, provider: createProvider(config) });
    }
    return { byId, ids: [...byId.keys()] as readonly string[] };
  };
  let current = build(live.config.models, new Map());
  live.onApplied((config) => {
    current = build(config.models, current.byId);
  });
  return { get: (id) => current.byId.get(id), ids: () => current.ids };
};
