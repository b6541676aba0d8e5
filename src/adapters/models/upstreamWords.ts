/**
 * An upstream's own words about a refusal or a failure, read from its error body: OpenAI's
 * `{"error":{"message":…}}`, vLLM's `{"object":"error","message":…}`, FastAPI's (TGI's) `{"detail":…}`, or plain
 * text. The upstream is not trusted: at most `maxErrorBodyBytes` are read, control characters are removed, and the
 * words are cut to `maxWordsChars`, so that a log line or a replay stays one short line whatever it sends.
 */

export const maxErrorBodyBytes = 16 * 1024;
export const maxWordsChars = 500;

// C0 and C1 controls and the line and paragraph separators: none may break a log line or a terminal.
// biome-ignore lint/suspicious/noControlCharactersInRegex: they are what is removed.
const controls = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g;

/** `text` without control characters, its blanks collapsed, at most `maxWordsChars` characters (whole code points). */
export const cleanWords = (text: string): string => {
  const clean = text.replace(controls, ' ').replace(/\s+/g, ' ').trim();
  if (clean.length <= maxWordsChars) return clean;
  return `${Array.from(clean.slice(0, maxWordsChars + 1))
    .slice(0, maxWordsChars - 1)
    .join('')}…`;
};

const stringAt = (value: unknown, key: string): string | undefined => {
  if (typeof value !== 'object' || value === null) return undefined;
  const found = (value as Record<string, unknown>)[key];
  return typeof found === 'string' ? found : undefined;
};

/** The words of an error body (its text as read, perhaps cut), or undefined when it says nothing. */
export const wordsOf = (body: string): string | undefined => {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    // Not JSON (or cut off): the text itself, as a proxy's error page or a server's plain answer says it.
    const text = cleanWords(body);
    return text === '' ? undefined : text;
  }
  const error = (parsed as { error?: unknown } | null)?.error;
  const words =
    stringAt(error, 'message') ??
    (typeof error === 'string' ? error : undefined) ??
    stringAt(parsed, 'message') ??
    stringAt(parsed, 'detail');
  const clean = cleanWords(words ?? (typeof parsed === 'string' ? parsed : ''));
  return clean === '' ? undefined : clean;
};

/** Reads at most `maxErrorBodyBytes` of a body, then lets the rest go (the connection with it). */
export const readErrorBody = async (body: ReadableStream<Uint8Array>): Promise<string> => {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let read = 0;
  try {
    while (read < maxErrorBodyBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      read += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return Buffer.concat(chunks).subarray(0, maxErrorBodyBytes).toString('utf8');
};
