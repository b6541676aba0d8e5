import type { OpenCall } from '../../support/socketCall.js';
import { assertMatchesOpenApi } from './openapi.js';

/**
 * Answers read whole and checked against the committed OpenAPI document (docs/openapi.json) before a test looks at
 * them, for the tests that call a route themselves rather than through the contract suites' client. Only for a path
 * the document names as it is (no `{id}` template): the checker looks paths up as called.
 */

const parsed = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** Reads `response` whole, fails when it breaks the document, and gives an unread copy of it. */
export const checkedAnswer = async (method: string, path: string, response: Response): Promise<Response> => {
  const text = await response.text();
  assertMatchesOpenApi({ method, path, status: response.status, headers: response.headers, body: parsed(text), text });
  return new Response(text, { status: response.status, headers: response.headers });
};

/** Reads a socket call's answer whole (`call.text()`), and fails when it breaks the document. */
export const checkedText = async (method: string, path: string, call: OpenCall): Promise<string> => {
  const text = await call.text();
  const headers = new Headers();
  for (const [name, value] of Object.entries(call.headers))
    for (const each of Array.isArray(value) ? value : value === undefined ? [] : [value]) headers.append(name, each);
  assertMatchesOpenApi({ method, path, status: call.status, headers, body: parsed(text), text });
  return text;
};
