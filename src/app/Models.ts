import * as Context from 'effect/Context';
import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import type { ModelConfig } from '../config.js';
import type { PassThroughOf } from '../modelPassThrough.js';
import type { ModelProvider } from '../ports/ModelProvider.js';
import { LiveConfig } from './LiveConfig.js';
import { reloadableModels } from './reloadableModels.js';

export type Model = { readonly config: ModelConfig; readonly provider: ModelProvider };

export interface ModelsShape {
  get(id: string): Model | undefined;
  ids(): readonly string[];
}

/** The configured models by id. */
export class Models extends Context.Service<Models, ModelsShape>()('airs/Models') {}

/** Makes the provider a model's config names (the adapters' `createProvider`, given by the composition root). */
export type ProviderFactory = (config: ModelConfig) => ModelProvider;

/** The fields each model passes through (only an `openai` model has any). */
export const passThroughOfModels =
  (models: ModelsShape): PassThroughOf =>
  (model) => {
    const config = models.get(model)?.config;
    return config?.provider === 'openai' ? config.passThrough : undefined;
  };

/** The live config's models: a reload (SIGHUP, `airs models reload`) adds and removes them (reloadableModels.ts). */
export const ModelsLayer = (createProvider: ProviderFactory) =>
  Layer.effect(
    Models,
    Effect.gen(function* () {
      return Models.of(reloadableModels(yield* LiveConfig, createProvider));
    }),
  );
