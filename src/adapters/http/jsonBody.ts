import { isUtf8 } from 'node:buffer';
import { type H3Event, HTTPError } from 'h3';
import { type ApiError, InvalidRequest, PayloadTooLarge } from '../../domain/errors.js';
import { type JsonBounds, jsonBoundExceeded } from '../../domain/jsonBounds.js';
import { BodyTooLarge, readBodyBytes } from './requestBody.js';

/** `application/json`, with parameters or in any case; the exact common form is recognised without splitting. */
const isJsonContentType = (value: string | null) =>
  value === 'application/json' || (value !== null && value.split(';')[0]?.trim().toLowerCase() === 'application/json');

/**
 * Reads the body as JSON within the byte limit; an oversized body is refused as soon as it is known (a declared
 * length over the limit before reading anything, a streamed one when it passes the limit). Bytes that are not UTF-8
 * are refused rather than decoded into U+FFFD: the stored prompt would differ from the one sent. A body deeper or
 * wider than `bounds` is refused from its bytes, before `JSON.parse` builds anything (contract 15).
 */
export const readJsonBody = async (
  event: H3Event,
  maxBodyBytes: number,
  bounds: JsonBounds,
): Promise<unknown | ApiError> => {
  if (!isJsonContentType(event.req.headers.get('content-type'))) {
    return new InvalidRequest({ message: 'Content-Type must be application/json' });
  }
  // Built only when needed: an error value captures a stack trace, which costs more than the rest of a request.
  const tooLarge = () => new PayloadTooLarge({ message: `request body is larger than ${maxBodyBytes} bytes` });
  if (Number(event.req.headers.get('content-length')) > maxBodyBytes) return tooLarge();
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(event, maxBodyBytes);
  } catch (error) {
    if (error instanceof BodyTooLarge) return tooLarge();
    if (error instanceof HTTPError && error.status === 400) {
      return new InvalidRequest({ message: 'request body could not be read' });
    }
    throw error;
  }
  if (!isUtf8(bytes)) return new InvalidRequest({ message: 'body is not valid UTF-8' });
  const beyond = jsonBoundExceeded(bytes, bounds);
  if (beyond !== undefined)
    return new InvalidRequest({
      message: beyond.message,
      details:
        beyond.bound === 'maxJsonDepth' ? { max_json_depth: bounds.maxDepth } : { max_json_values: bounds.maxValues },
    });
  try {
    return JSON.parse(bytes.toString('utf8')) as unknown;
  } catch (error) {
    return new InvalidRequest({ message: `body is not valid JSON: ${(error as Error).message.slice(0, 200)}` });
  }
};
