/**
 * Bounds on the names callers give: request, account and key ids, and emails. Each ends up as (part of) a database
 * key, and LMDB refuses keys over 1,978 bytes with an error; anything longer than these bounds cannot name
 * anything airs made, so it is refused or not found before it reaches the store.
 */

/** airs's own ids are 38 characters at most (`req_` + 12 + 22); other writers' ids get generous room. */
export const maxIdLength = 128;

/** The longest address SMTP can carry (RFC 5321: a path of 256 octets, less the angle brackets). */
export const maxEmailLength = 254;

/**
 * Control characters (C0, DEL, C1: `\p{Cc}`): an escape sequence in a name or email shown in the operator's
 * terminal would act on it. No text shown in a terminal or a page may hold one (product contract 15).
 */
export const controlCharacters = /\p{Cc}/u;

const emailPattern = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** What is wrong with an email address (already trimmed and lower-cased), if anything. */
export const emailProblem = (email: string): string | undefined => {
  if (email.length > maxEmailLength)
    return `an email address has at most ${maxEmailLength} characters; this one has ${email.length}`;
  if (controlCharacters.test(email))
    return 'an email address must not contain control characters (escape sequences, line breaks, tabs)';
  if (!emailPattern.test(email)) return `"${email}" is not an email address`;
  return undefined;
};

/** Whether `id` may name something stored (a longer one never does). */
export const fitsIdBound = (id: string): boolean => id.length <= maxIdLength;

/** An id as shown in a message: cut to a readable length. */
export const idForMessage = (id: string): string => (id.length > 100 ? `${id.slice(0, 100)}…` : id);

/** A lifetime in the largest whole unit that states it exactly: "24 hours", "1 hour", "90 seconds". */
export const lifetimeInWords = (seconds: number): string => {
  const [count, unit] =
    seconds % 86_400 === 0 && seconds >= 2 * 86_400
      ? [seconds / 86_400, 'day']
      : seconds % 3_600 === 0
        ? [seconds / 3_600, 'hour']
        : seconds % 60 === 0
          ? [seconds / 60, 'minute']
          : [seconds, 'second'];
  return `${count} ${unit}${count === 1 ? '' : 's'}`;
};
