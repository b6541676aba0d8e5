import OpenAI from 'openai';
import type { ModelProvider } from '../../ports/ModelProvider.js';

export type OpenAiOptions = {
  /** The server's API root, as OpenAI clients take it: `http://localhost:11434/v1`, `https://api.openai.com/v1`. */
  readonly baseUrl: string;
  /** The upstream key (read from the environment variable the config names), if the server needs one. */
  readonly apiKey: string | undefined;
  readonly upstreamModel: string;
  readonly timeoutMs: number;
  /** Retries of upstream 429, 5xx and connection errors inside one attempt, with the SDK's backoff (Retry-After honoured). */
  readonly maxRetries: number;
};

/** Why an upstream call failed, in words safe for the log: status and the server's message, never the key. */
const describeUpstreamError = (error: unknown): string => {
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    return `upstream answered ${error.status}: ${error.message}`.slice(0, 300);
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) return 'upstream timed out';
  if (error instanceof OpenAI.APIConnectionError) return `upstream unreachable: ${error.message}`.slice(0, 300);
  return error instanceof Error ? error.message : String(error);
};

/**
 * The `openai` provider: any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama, LM Studio,
 * TGI, hosted APIs), through the official `openai` client. A prompt is sent as one user message, a conversation as
 * its messages.
 */
export const openAiProvider = (options: OpenAiOptions): ModelProvider => {
  const client = new OpenAI({
    baseURL: options.baseUrl,
    // Local servers need no key; the SDK insists on one, and an unused placeholder is harmless.
    apiKey: options.apiKey ?? 'no-key',
    timeout: options.timeoutMs,
    maxRetries: options.maxRetries,
  });
  return {
    generate: async ({ prompt, messages, signal }) => {
      let completion: OpenAI.Chat.Completions.ChatCompletion;
      try {
        completion = await client.chat.completions.create(
          {
            model: options.upstreamModel,
            // A conversation goes as its messages; `developer` is sent as `system`, which every compatible server knows.
            messages:
              messages === undefined
                ? [{ role: 'user', content: prompt }]
                : messages.map(({ role, content }) => ({ role: role === 'developer' ? 'system' : role, content })),
          },
          { signal },
        );
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        throw new Error(describeUpstreamError(error));
      }
      const text = completion?.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new Error('upstream answer has no choices[0].message.content');
      return text;
    },
  };
};
