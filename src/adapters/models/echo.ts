import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatMessage, ModelProvider } from '../../ports/ModelProvider.js';

/** Whitespace-separated words: the documented stand-in for tokens of a model that has no tokenizer. */
export const wordsIn = (text: string): number => {
  const trimmed = text.trim();
  return trimmed === '' ? 0 : trimmed.split(/\s+/u).length;
};

const inputWords = (prompt: string, messages: readonly ChatMessage[] | undefined): number =>
  messages === undefined ? wordsIn(prompt) : messages.reduce((sum, m) => sum + wordsIn(m.content ?? ''), 0);

/**
 * The built-in `echo` provider: answers with the prompt (a conversation's last user message) unchanged, after
 * `delayMs`. Its usage counts words: of everything it was given, and of its answer.
 */
export const echoProvider = (options: { readonly delayMs: number }): ModelProvider => ({
  answersAtOnce: options.delayMs <= 0,
  generate: async ({ prompt, messages, signal }) => {
    if (options.delayMs > 0) await sleep(options.delayMs, undefined, { signal });
    signal.throwIfAborted();
    return {
      text: prompt,
      finishReason: 'stop',
      usage: { inputTokens: inputWords(prompt, messages), outputTokens: wordsIn(prompt) },
    };
  },
});
