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

/**
 * The upstream as the log and the event log name it: its base URL without user, password, query or fragment (where
 * a credential could hide; the key itself travels in a header and is never part of it).
 */
export const upstreamName = (baseUrl: string): string => {
  try {
    const url = new URL(baseUrl);
    url.username = '';
    url.password = '';
    url.search = '';
    url.hash = '';
    return url.href.replace(/\/$/, '').slice(0, 200);
  } catch {
    return '(an invalid base URL)';
  }
};

/**
 * The innermost cause of a failed connection, in words: the system's code and message (`ECONNREFUSED (connect
 * ECONNREFUSED 127.0.0.1:9999)`, `ENOTFOUND (getaddrinfo ENOTFOUND host)`), found under the SDK's `Connection error.`
 * and fetch's `fetch failed`.
 */
const connectionCause = (error: unknown): string => {
  let deepest: unknown = error;
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; depth++) {
    deepest = cause;
    cause = cause.cause ?? (cause instanceof AggregateError ? cause.errors[0] : undefined);
  }
  const code = (deepest as { code?: unknown }).code;
  const message = deepest instanceof Error ? deepest.message : String(deepest);
  if (typeof code !== 'string' || code === '') return message.slice(0, 200);
  return message === '' || message === code ? code : `${code} (${message.slice(0, 200)})`;
};

/** Why an upstream call failed, in words safe for the log: which upstream, status and message or cause, never the key. */
const describeUpstreamError = (error: unknown, upstream: string): string => {
  if (error instanceof OpenAI.APIError && error.status !== undefined) {
    return `upstream ${upstream} answered ${error.status}: ${error.message}`.slice(0, 500);
  }
  if (error instanceof OpenAI.APIConnectionTimeoutError) return `upstream ${upstream} timed out`;
  if (error instanceof OpenAI.APIConnectionError) return `upstream ${upstream} unreachable: ${connectionCause(error)}`;
  return error instanceof Error ? error.message : String(error);
};

/**
 * The `openai` provider: any OpenAI-compatible chat-completions server (vLLM, llama.cpp server, Ollama, LM Studio,
 * TGI, hosted APIs), through the official `openai` client. A prompt is sent as one user message, a conversation as
 * its messages.
 */
export const openAiProvider = (options: OpenAiOptions): ModelProvider => {
  const upstream = upstreamName(options.baseUrl);
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
        throw new Error(describeUpstreamError(error, upstream));
      }
      const text = completion?.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new Error('upstream answer has no choices[0].message.content');
      return text;
    },
  };
};
