import { InvalidRequest } from '../../../domain/errors.js';
import { metadataRefusal } from './metadataSchema.js';

/**
 * A create's `metadata` (`POST /v1/responses`, `POST /v1/chat/completions`), kept with the request as the JSON text of
 * the object (RequestQueued.metadata), in the order given; a Response shows it. Its bounds are the wire format's
 * (openai/wireFormat.ts, metadataRefusal).
 */

/** The text kept for a `metadata` within bounds: `undefined` when absent, `null` or empty (a Response then shows `{}`). */
export const keptMetadataOf = (value: unknown): string | undefined => {
  if (value === undefined || value === null) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  return entries.length === 0 ? undefined : JSON.stringify(Object.fromEntries(entries));
};

/**
 * `metadata` of a create's body as the text kept with the request; `undefined` when absent, `null` or empty; a
 * refusal naming `metadata` when it is not within OpenAI's bounds.
 */
export const metadataOf = (value: unknown): string | undefined | InvalidRequest => {
  const refusal = value === undefined || value === null ? undefined : metadataRefusal(value);
  if (refusal !== undefined)
    return new InvalidRequest({ message: `metadata: ${refusal}`, details: { param: 'metadata' } });
  return keptMetadataOf(value);
};

/** The metadata a request keeps, as its Response shows it (`{}` when it has none). */
export const shownMetadataOf = (kept: string | undefined): Record<string, string> => {
  if (kept === undefined) return {};
  try {
    return JSON.parse(kept) as Record<string, string>;
  } catch {
    return {};
  }
};
