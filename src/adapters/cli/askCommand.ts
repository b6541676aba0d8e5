import type { Command } from 'commander';
import type { CompletedPoll, PollInfo } from '../../client/index.js';
import { CliError, emit, type Output } from './output.js';

/** Exit statuses of `airs ask` (also in docs/decisions.md). */
export const askExit = {
  failure: 1,
  usage: 2,
  auth: 4,
  notFound: 5,
  timeout: 6,
  interrupted: 130,
} as const;

const defaultUrl = 'http://127.0.0.1:8080';

type AskOptions = {
  model: string;
  url?: string;
  key?: string;
  json?: boolean;
  timeout?: string;
  idempotencyKey?: string;
};

/** The prompt: the argument, or all of stdin for `-` (one trailing newline removed: `echo` and shells add it). */
const readPrompt = async (argument: string): Promise<string> => {
  if (argument !== '-') return argument;
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return Buffer.concat(chunks)
    .toString('utf8')
    .replace(/\r?\n$/, '');
};

const timeoutMsOf = (value: string | undefined): number | undefined => {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new CliError(`--timeout: "${value}" is not a positive number of seconds`, askExit.usage);
  }
  return Math.round(seconds * 1000);
};

const urlOf = (value: string): string => {
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    throw new CliError(`--url: "${value}" is not a URL`, askExit.usage);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new CliError(`--url: "${value}" is not an http:// or https:// URL`, askExit.usage);
  }
  return value;
};

/** One line for stderr, whatever the server put in its message. */
const oneLine = (text: string) => text.replace(/\s*[\r\n]+\s*/g, ' ').trim();

type ClientModule = typeof import('../../client/index.js');

/** The client's failures as CLI failures with their documented exit statuses. */
const toCliError = (error: unknown, { AirsError, AirsTimeoutError }: ClientModule): unknown => {
  if (error instanceof AirsTimeoutError) return new CliError(oneLine(error.message), askExit.timeout);
  if (!(error instanceof AirsError)) return error;
  const exitCode =
    error.status === 401 || error.status === 403
      ? askExit.auth
      : error.status === 404
        ? askExit.notFound
        : askExit.failure;
  const prefix = error.status === 0 ? '' : `${error.status} ${error.code}: `;
  return new CliError(oneLine(`${prefix}${error.message}`), exitCode);
};

/** A spinner on stderr with the elapsed time and the poll count, only when stderr is a terminal. */
const startProgress = async (model: string) => {
  const stream = process.stderr;
  if (!stream.isTTY) return { polled: (_info: PollInfo) => {}, note: (_text: string) => {}, stop: () => {} };
  const { default: yoctoSpinner } = await import('yocto-spinner');
  const startedAt = Date.now();
  let polls = 0;
  let state = `submitting to ${model}`;
  let note = '';
  const text = () => {
    const seconds = Math.floor((Date.now() - startedAt) / 1000);
    const count = polls === 0 ? '' : ` · ${polls} ${polls === 1 ? 'poll' : 'polls'}`;
    return `${state} · ${seconds}s${count}${note === '' ? '' : ` · ${note}`}`;
  };
  const spinner = yoctoSpinner({ text: text(), stream, handleSignals: false }).start();
  const timer = setInterval(() => {
    spinner.text = text();
  }, 1000);
  timer.unref();
  return {
    polled: (info: PollInfo) => {
      polls = info.polls;
      state = `${info.reqId} ${info.body.status}`;
      note = '';
      spinner.text = text();
    },
    note: (value: string) => {
      note = value;
      spinner.text = text();
    },
    stop: () => {
      clearInterval(timer);
      spinner.stop();
    },
  };
};

const ask = async (promptArgument: string, options: AskOptions, output: Output): Promise<void> => {
  const key = options.key ?? process.env.AIRS_API_KEY;
  if (key === undefined || key.trim() === '') {
    throw new CliError('no API key: pass --key or set AIRS_API_KEY', askExit.usage);
  }
  const baseUrl = urlOf(options.url ?? process.env.AIRS_URL ?? defaultUrl);
  const timeoutMs = timeoutMsOf(options.timeout);
  // Loaded on use, like every module a command needs: `airs --help` and the other commands start without them.
  const [client, { isIdempotencyKey }] = await Promise.all([
    import('../../client/index.js'),
    import('../../client/idempotency.js'),
  ]);
  if (options.idempotencyKey !== undefined && !isIdempotencyKey(options.idempotencyKey)) {
    throw new CliError(
      '--idempotency-key: expected 1 to 255 visible ASCII characters (no spaces or control characters)',
      askExit.usage,
    );
  }
  const prompt = await readPrompt(promptArgument);

  const progress = await startProgress(options.model);
  const controller = new AbortController();
  const interrupted = new CliError('interrupted', askExit.interrupted);
  const onSigint = () => controller.abort(interrupted);
  process.once('SIGINT', onSigint);
  let completed: CompletedPoll;
  try {
    const airs = client.createClient({
      baseUrl,
      apiKey: key,
      onRetry: (info) =>
        progress.note(
          `${info.status === 0 ? 'answer lost' : `${info.status} ${info.code}`}, retry ${info.retry} in ${Math.ceil(info.delayMs / 1000)}s`,
        ),
    });
    // The client sends an Idempotency-Key with the submit (this one, or a new one), so a submit whose answer was lost
    // is retried without making a second request.
    completed = await airs.run(options.model, prompt, {
      signal: controller.signal,
      timeoutMs,
      onPoll: progress.polled,
      idempotencyKey: options.idempotencyKey,
    });
  } catch (error) {
    throw toCliError(error, client);
  } finally {
    process.removeListener('SIGINT', onSigint);
    progress.stop();
  }
  emit(output, options.json, completed, () => [completed.response], { multiline: true });
};

/** `airs ask`: submits a prompt to a running server, polls as the specification says, prints the response. */
export const registerAskCommand = (program: Command, output: Output) => {
  program
    .command('ask')
    .description('submit a prompt to a running server, wait for it and print the response')
    .argument('<prompt>', 'the prompt, or - to read it from stdin')
    .requiredOption('--model <model>', 'the model id (e.g. echo)')
    .option('--url <url>', `the server (default: $AIRS_URL, else ${defaultUrl})`)
    .option('--key <key>', 'the API key (default: $AIRS_API_KEY)')
    .option('--timeout <seconds>', 'give up after this many seconds (exit status 6)')
    .option(
      '--idempotency-key <key>',
      'the submit’s Idempotency-Key (default: a new random one); asking again with the same key and prompt within 24 h answers the same request',
    )
    .option('--json', 'print the completed poll answer as one JSON document')
    .action((prompt: string, options: AskOptions) => ask(prompt, options, output));
};
