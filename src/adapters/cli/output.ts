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
