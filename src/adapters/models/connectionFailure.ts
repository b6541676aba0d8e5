/** Codes of a connection refused: something answers at that address, but nothing listens on that port. */
const refusedCodes: ReadonlySet<string> = new Set(['ECONNREFUSED']);

/**
 * The innermost cause of a failed connection, in words said once: the system's message (`connect ECONNREFUSED
 * 127.0.0.1:9999`, `getaddrinfo ENOTFOUND host`), found under the SDK's `Connection error.` and fetch's `fetch
 * failed` (also inside an AggregateError, when several addresses were tried), with its code only where the message
 * does not already say it. Whether the connection was refused, as opposed to never made (an unknown host).
 */
export const connectionFailure = (error: unknown): { readonly refused: boolean; readonly detail: string } => {
  let deepest: unknown = error;
  for (let cause = error, depth = 0; cause instanceof Error && depth < 8; depth++) {
    deepest = cause;
    cause = cause.cause ?? (cause instanceof AggregateError ? cause.errors[0] : undefined);
  }
  const code = (deepest as { code?: unknown }).code;
  const message = (deepest instanceof Error ? deepest.message : String(deepest)).slice(0, 200);
  const refused = typeof code === 'string' && refusedCodes.has(code);
  if (typeof code !== 'string' || code === '' || message.includes(code))
    return { refused, detail: message || 'no cause given' };
  return { refused, detail: message === '' ? code : `${code}: ${message}` };
};
