import type { ModelConfig } from '../../config.js';
import type { ModelProvider } from '../../ports/ModelProvider.js';
import { echoProvider } from './echo.js';

/** The table of providers: a model's `provider` field picks the factory that builds its backend. */
const factories: {
  readonly [P in ModelConfig['provider']]: (model: Extract<ModelConfig, { provider: P }>) => ModelProvider;
} = {
  echo: (model) => echoProvider({ delayMs: model.delayMs }),
};

export const createProvider = (model: ModelConfig): ModelProvider => factories[model.provider](model);
