import type { ModelConfig } from '../../config.js';
import type { ModelProvider } from '../../ports/ModelProvider.js';
import { echoProvider } from './echo.js';
import { openAiProvider } from './openai.js';

/** The table of providers: a model's `provider` field picks the factory that builds its backend. */
const factories: {
  readonly [P in ModelConfig['provider']]: (model: Extract<ModelConfig, { provider: P }>) => ModelProvider;
} = {
  echo: (model) => echoProvider({ delayMs: model.delayMs }),
  openai: (model) =>
    openAiProvider({
      baseUrl: model.baseUrl,
      // Read at start-up from the variable the config names; never stored, logged or written to the log.
      apiKey: model.apiKeyEnv === undefined ? undefined : process.env[model.apiKeyEnv],
      upstreamModel: model.upstreamModel,
      timeoutMs: model.timeoutMs,
      maxRetries: model.maxRetries,
    }),
};

export const createProvider = (model: ModelConfig): ModelProvider =>
  (factories[model.provider] as (m: ModelConfig) => ModelProvider)(model);
