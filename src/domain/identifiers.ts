/**
 * The forms of the names callers give: request, account and key ids, and emails. Each ends up as (part of) a database
 * key or parameter: LMDB refuses keys over 1,978 bytes with an error, PostgreSQL refuses NUL in text. Anything that
 * cannot name something airs made is refused or not found before it reaches the store.
 */

/**
 * What each kind of id airs issues looks like: its prefix, then a body of base64url characters (`A-Z a-z 0-9 _ -`) of
 * one of the listed lengths. Anything else cannot name something airs made, so it is answered as not found before any
 * store is asked (product contract 18): a NUL, a quote, a 10,000-character string or an emoji never becomes a database
 * parameter or key, and every store answers it alike.
 *
 * Every form airs has ever issued passes. Request ids were `req_` + 128 random bits (22 characters) at first; since
 * 300fa9b they are `req_` + the creation time (12 hex digits) + the same 22 (34 in all). A Response is its request
 * under OpenAI's prefix (`resp_X` is `req_X`), a chat completion too (`chatcmpl-X`), and so are the output items of a
 * Response (`msg_X`, `fc_X_n`, parsed in responseObject.ts). Batches and files (contract 16) will be issued in the
 * request's form. Accounts, keys and webhook endpoints are 96 random bits (16 characters); sessions 128 (22, see
 * Sessions.ts). Webhook event and delivery ids are made from the ids they are about (webhook/eventTypes.ts).
 */
export const idForms = {
  request: { prefix: 'req_', lengths: [22, 34] },
  response: { prefix: 'resp_', lengths: [22, 34] },
  chatCompletion: { prefix: 'chatcmpl-', lengths: [22, 34] },
  batch: { prefix: 'batch_', lengths: [22, 34] },
  file: { prefix: 'file-', lengths: [22, 34] },
  account: { prefix: 'acct_', lengths: [16] },
  key: { prefix: 'key_', lengths: [16] },
  /** A webhook endpoint: 96 random bits, as accounts and keys. */
  webhookEndpoint: { prefix: 'whep_', lengths: [16] },
  /** A webhook event: the body of the request or batch id it is about, then two characters naming its type
   * (webhook/eventTypes.ts), so that the same source event always makes the same id. */
  webhookEvent: { prefix: 'evt_', lengths: [24, 36] },
  /** A delivery (the `webhook-id` header): the event's id body, then the endpoint's (see webhook/eventTypes.ts). */
  webhookDelivery: { prefix: 'wh_', lengths: [40, 52] },
} as const satisfies Record<string, { readonly prefix: string; readonly lengths: readonly number[] }>;

export type IdKind = keyof typeof idForms;

const base64url = /^[A-Za-z0-9_-]*$/;

/** Whether `text` could be an id of kind `kind` that airs issued (its form only: whether it exists is the store's). */
export const couldBeId = (kind: IdKind, text: string): boolean => {
  const { prefix, lengths } = idForms[kind];
  const bodyLength = text.length - prefix.length;
  return (
    (lengths as readonly number[]).includes(bodyLength) &&
    text.startsWith(prefix) &&
    base64url.test(text.slice(prefix.length))
  );
};

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
