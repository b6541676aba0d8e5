import { type ModelConfig, maxAnswerBytesOf, upstreamsOf } from '../../config.js';
import type { ModelProvider } from '../../ports/ModelProvider.js';
import { echoProvider } from './echo.js';
import type { OpenAiOptions } from './openai.js';

/** The table of providers: a model's `provider` field picks the factory that builds its backend. */
const factories: {
  readonly [P in ModelConfig['provider']]: (model: Extract<ModelConfig, { provider: P }>) => ModelProvider;
} = {
  echo: (model) => echoProvider({ delayMs: model.delayMs }),
  openai: (model) => {
    const upstreams = upstreamsOf(model);
    // With several upstreams a failure goes to failover, not to the SDK's retries on the same upstream
    // (docs/decisions.md, "Issue 41: the SDK's retries").
    const maxRetries = upstreams.length > 1 ? 0 : (model.maxRetries ?? 2);
    const byName = new Map(
      upstreams.map((upstream) => [
        upstream.name,
        loadedOnFirstCall({
          baseUrl: upstream.baseUrl,
          // Read at start-up from the variable the config names; never stored, logged or written to the log.
          apiKey: upstream.apiKeyEnv === undefined ? undefined : process.env[upstream.apiKeyEnv],
          upstreamModel: upstream.upstreamModel,
          timeoutMs: upstream.timeoutMs,
          maxRetries,
          maxAnswerBytes: maxAnswerBytesOf(model),
        }),
      ]),
    );
    const first = byName.get(upstreams[0]?.name ?? '0') as ModelProvider;
    return {
      // An upstream no longer configured (its call was chosen under an older config) goes to the first.
      generate: (input) => (byName.get(input.upstream ?? '') ?? first).generate(input),
    };
  },
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
