import { setTimeout as sleep } from 'node:timers/promises';
import type { ModelProvider } from '../../ports/ModelProvider.js';

/** The built-in `echo` provider: answers with the prompt unchanged, after `delayMs`. */
export const echoProvider = (options: { readonly delayMs: number }): ModelProvider => ({
  generate: async ({ prompt, signal }) => {
    if (options.delayMs > 0) await sleep(options.delayMs, undefined, { signal });
    signal.throwIfAborted();
    return prompt;
  },
});
