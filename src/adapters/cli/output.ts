/** Where CLI commands write: stdout for results, stderr for one-line failures. Swappable in tests. */
export type Output = { readonly out: (line: string) => void; readonly err: (line: string) => void };

export const processOutput: Output = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
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

/** `--json`: one JSON document on stdout and nothing else; otherwise the human lines. */
export const emit = (output: Output, json: boolean | undefined, document: unknown, lines: () => string[]) => {
  if (json) output.out(JSON.stringify(document, null, 2));
  else for (const line of lines()) output.out(line);
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
