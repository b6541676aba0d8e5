/**
 * Every exit status `airs` ends with, and which commands use it: shown by `airs --help`, listed in the README, and
 * checked against the code by test/unit/exitStatuses.test.ts.
 */
export const exitStatuses: ReadonlyArray<readonly [status: number, commands: string, meaning: string]> = [
  [0, 'all', 'success; also when the reader of the output stops early (`airs replay | head -1`)'],
  [
    1,
    'all',
    'refused or failed: an unknown account, key, request, batch, webhook endpoint or delivery, a key or webhook endpoint limit, a webhook URL refused, a request or batch that cannot be cancelled, a backup copy that failed, a migrated copy that did not verify (nothing written); `ask`: an error answer (400, 429 or 5xx after its retries) or no server; `serve`: a stop that outlived shutdownDelaySeconds + shutdownGraceSeconds by 7 s; `models check`: an upstream with a problem',
  ],
  [
    2,
    'all',
    'usage or setup: a bad flag, argument or config; a data directory that cannot be used, holds no database, is of another layout or is damaged; `serve`: the port cannot be listened on; `backup`: a destination that is not empty or cannot be made; `migrate`: a source that is missing or damaged, a database that is not empty, cannot be reached or is not postgres:// (nothing written)',
  ],
  [3, 'replay --verify', 'views differ from the log'],
  [4, 'ask', 'the API key was refused (401, 403)'],
  [5, 'ask', 'not found (404, e.g. the request expired)'],
  [6, 'ask', '--timeout passed'],
  [130, 'ask', 'interrupted (Ctrl-C)'],
];

/** `text` in lines of at most `width` characters, each after `indent` spaces but the first. */
const wrap = (text: string, width: number, indent: number): string => {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    if (line !== '' && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line === '' ? word : `${line} ${word}`;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
};

/** The statuses as `--help` shows them, after the commands. */
export const exitStatusHelp = (): string =>
  [
    '',
    'Exit statuses:',
    ...exitStatuses.map(
      ([status, commands, meaning]) =>
        `  ${String(status).padEnd(4)}${wrap(`${commands === 'all' ? '' : `${commands}: `}${meaning.replaceAll('`', '')}`, 80, 6)}`,
    ),
  ].join('\n');
