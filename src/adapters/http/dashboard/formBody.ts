import type { H3Event } from 'h3';
import { BodyTooLarge, readBodyBytes } from '../requestBody.js';

/** The most a dashboard form may be: its forms have at most three fields (csrf, email, password) of short text. */
export const formBounds = { maxBytes: 16 * 1024, maxFields: 16 } as const;

/** A posted form refused for its size, with the sentence the page shows. */
export class FormTooLarge {
  constructor(readonly message: string) {}
}

const ampersand = 0x26;

/** Fields the body can hold at most: one more than its `&` separators (empty ones are dropped by the parser). */
const fieldsAtMost = (bytes: Buffer) => {
  let count = 1;
  for (let at = bytes.indexOf(ampersand); at !== -1; at = bytes.indexOf(ampersand, at + 1)) count++;
  return count;
};

/**
 * A posted form, if it is one (url-encoded), within `formBounds`: more bytes or fields are refused before anything
 * is decoded (a 16 KB body of `&` would otherwise be parsed into 16,000 entries). Anything else that is not a readable
 * form is `undefined`, answered like a form without its CSRF token.
 */
export const readForm = async (event: H3Event): Promise<URLSearchParams | FormTooLarge | undefined> => {
  const type = event.req.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/x-www-form-urlencoded') return undefined;
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(event, formBounds.maxBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge)
      return new FormTooLarge(`A form may hold at most ${formBounds.maxBytes / 1024} KB; this one holds more.`);
    return undefined;
  }
  if (fieldsAtMost(bytes) > formBounds.maxFields)
    return new FormTooLarge(`A form may hold at most ${formBounds.maxFields} fields; this one holds more.`);
  return new URLSearchParams(bytes.toString('utf8'));
};
