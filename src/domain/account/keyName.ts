import { controlCharacters } from '../identifiers.js';

/** The longest name a key may have, in characters (code points), after trimming. */
export const maxKeyNameLength = 100;

/**
 * What is wrong with a key's name, if anything: it must be trimmed already, 1 to 100 characters, and hold no control
 * characters (it is shown on one line in `airs keys list` and in the dashboard).
 */
export const keyNameProblem = (name: string): string | undefined => {
  const length = [...name].length;
  if (name !== name.trim() || length === 0) return 'a key name must not be empty or start or end with spaces';
  if (length > maxKeyNameLength) return `a key name has at most ${maxKeyNameLength} characters; this one has ${length}`;
  if (controlCharacters.test(name)) return 'a key name must not contain control characters (line breaks, tabs)';
  return undefined;
};
