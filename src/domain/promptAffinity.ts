import { fnv1a } from './upstreamChoice.js';

/** How much of a prompt the affinity key reads (contract 19): a prefix cache holds the start of a prompt. */
export const affinityInputChars = 2_000;

/**
 * A request's affinity key: a 32-bit hash of the first 2,000 characters of its prompt as an upstream reads it, its
 * instructions (or system message) first, then its input; computed once at submit and kept with the request, so that
 * requests sharing a prompt prefix go to the upstream that has it cached (upstreamChoice.ts). The prefix, not the
 * instructions and the input apart: questions asked under one long system prompt share its cache, and so its key
 * (docs/decisions.md, "Issue 41: the affinity key is the prompt's prefix").
 */
export const affinityKeyOf = (instructions: string, input: string): number =>
  fnv1a(`${instructions}${input}`.slice(0, affinityInputChars));
