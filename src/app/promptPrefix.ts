import type { ModelConfig } from '../config.js';
import { affinityInputChars, affinityKeyOf } from '../domain/promptAffinity.js';
import type { ModelInput } from './storedInput.js';

/**
 * The affinity key a request is submitted with (domain/promptAffinity.ts): for a model with several upstreams only
 * (with one, there is nothing to choose). A conversation's instructions are its system and developer messages; its
 * input, the other messages' text in order, of which only the first 2,000 characters are read.
 */
export const affinityOf = (model: ModelConfig | undefined, input: ModelInput): number | undefined => {
  if (model?.provider !== 'openai' || (model.upstreams?.length ?? 1) < 2) return undefined;
  if (input.messages === undefined) return affinityKeyOf('', input.prompt);
  let instructions = '';
  let rest = '';
  for (const message of input.messages) {
    const text = message.content ?? '';
    if (message.role === 'system' || message.role === 'developer') instructions += `${text}\n`;
    else if (rest.length < affinityInputChars) rest += `${text}\n`;
  }
  return affinityKeyOf(instructions, rest);
};
