import { type ModelConfig, maxAnswerBytesOf } from '../../config.js';
import type { ModelProvider } from '../../ports/ModelProvider.js';
import { echoProvider } from './echo.js';
import type { OpenAiOptions } from './openai.js';

/** The table of providers: a model's `provider` field picks the factory that builds its backend. */
const factories: {
  readonly [P in ModelConfig['provider']]: (model: Extract<ModelConfig, { provider: P }>) => ModelProvider;
} = {
  echo: (model) => echoProvider({ delayMs: model.delayMs }),
  openai: (model) =>
    loadedOnFirstCall({
      baseUrl: model.baseUrl,
      // Read at start-up from the variable the config names; never stored, logged or written to the log.
      apiKey: model.apiKeyEnv === undefined ? undefined : process.env[model.apiKeyEnv],
      upstreamModel: model.upstreamModel,
      timeoutMs: model.timeoutMs,
      maxRetries: model.maxRetries,
      maxAnswerBytes: maxAnswerBytesOf(model),
    }),
};

/**
 * The OpenAI-compatible provider, with the `openai` SDK (about 150 modules) loaded at its first call: a server or CLI
 * command that never calls such a model starts without it.
 */
const loadedOnFirstCall = (options: OpenAiOptions): ModelProvider => {
  let provider: Promise<ModelProvider> | undefined;
  return {
    generate: async (input) => {
      provider ??= import('./openai.js').then(({ openAiProvider }) => openAiProvider(options));
      return (await provider).generate(input);
    },
  };
};

export const createProvider = (model: ModelConfig): ModelProvider =>
  (factories[model.provider] as (m: ModelConfig) => ModelProvider)(model);
