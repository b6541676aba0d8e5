/** Where CLI commands write: stdout for results, stderr for one-line failures. Swappable in tests. */
export type Output = { readonly out: (line: string) => void; readonly err: (line: string) => void };

/** Control characters (C0, DEL, C1), and the few with a short escape of their own. */
const controls = /\p{Cc}/gu;
const shortEscapes: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };
const escaped = (char: string) =>
  shortEscapes[char] ?? `\\x${(char.codePointAt(0) as number).toString(16).padStart(2, '0')}`;

/**
 * Text as it may reach the operator's terminal: every control character written visibly (`\x1b`, `\n`), so that an
 * escape sequence stored in an email or name (data older than the checks that refuse them, a model's response) is
 * shown instead of acting on the terminal. `keep` names the controls left as they are (line breaks in a response).
 */
export const terminalSafe = (text: string, keep = ''): string =>
  text.replace(controls, (char) => (keep.includes(char) ? char : escaped(char)));

/** JSON as written for scripts: the same value, with DEL and C1 controls escaped too (JSON.stringify leaves them). */
const jsonText = (document: unknown) =>
  JSON.stringify(document, null, 2).replace(
    /[\u007f-\u009f]/g,
    (char) => `\\u${(char.codePointAt(0) as number).toString(16).padStart(4, '0')}`,
  );

export const processOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  // Failures quote what they were given (an id, an email); commander's own messages span lines.
  err: (line) => process.stderr.write(`${terminalSafe(line, '\n\t')}\n`),
};

/** A failure the CLI reports as one line on stderr with a non-zero exit status. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/**
 * `--json`: one JSON document on stdout and nothing else; otherwise the human lines, each with its control characters
 * escaped (`multiline`: line breaks and tabs kept, for a response printed as it is).
 */
export const emit = (
  output: Output,
  json: boolean | undefined,
  document: unknown,
  lines: () => string[],
  { multiline = false }: { readonly multiline?: boolean } = {},
) => {
  if (json) output.out(jsonText(document));
  else for (const line of lines()) output.out(terminalSafe(line, multiline ? '\n\t' : ''));
};

const isClosedPipe = (error: NodeJS.ErrnoException) => error.code === 'EPIPE' || error.code === 'ERR_STREAM_DESTROYED';

/**
 * A reader that goes away before the output ends (`airs replay | head -1`) ends the command quietly with status 0, as
 * it ends `cat`: the reader has what it wanted. Node would otherwise die on the write's EPIPE with a stack trace and
 * status 1. A server keeps serving (its URL line is its only output); a closed stderr only loses messages.
 */
export const endQuietlyWhenReaderLeaves = (keepRunning: boolean): void => {
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (!isClosedPipe(error)) throw error;
    if (!keepRunning) process.exit(0);
  });
  process.stderr.on('error', (error: NodeJS.ErrnoException) => {
    if (!isClosedPipe(error)) throw error;
  });
};
