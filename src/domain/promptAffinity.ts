import { fnv1a } from './upstreamChoice.js';

/** How much of the input the affinity key reads (contract 19): a prefix cache holds the start of a prompt. */
export const affinityInputChars = 2_000;

/**
 * A request's affinity key: a 32-bit hash of its instructions (or system message) and the first 2,000 characters of
 * its input, computed once at submit and kept with the request, so that requests sharing a prompt prefix go to the
 * upstream that has it cached (upstreamChoice.ts).
 */
export const affinityKeyOf = (instructions: string, input: string): number =>
  fnv1a(input.slice(0, affinityInputChars), fnv1a(instructions) ^ 0x9e3779b9);
