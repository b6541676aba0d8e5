import * as Context from 'effect/Context';
import * as Layer from 'effect/Layer';
import { type Logger, pino } from 'pino';

/** Structured logs (JSON lines on stderr). Key material and payload text are never logged. */
export class Log extends Context.Service<Log, Logger>()('airs/Log') {}

const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/**
 * The level asked for by `LOG_LEVEL` (the contract's name; `AIRS_LOG_LEVEL`, this version's earlier name, still
 * counts), `info` if neither is set, or what is wrong with it.
 */
export const logLevelFromEnv = (env: NodeJS.ProcessEnv = process.env): { level: string } | { problem: string } => {
  const [name, value] =
    env.LOG_LEVEL !== undefined ? ['LOG_LEVEL', env.LOG_LEVEL] : ['AIRS_LOG_LEVEL', env.AIRS_LOG_LEVEL];
  if (value === undefined || value === '') return { level: 'info' };
  const level = value.trim().toLowerCase();
  return logLevels.includes(level)
    ? { level }
    : { problem: `${name}: "${value}" is not a log level; use one of ${logLevels.join(', ')}` };
};

/**
 * An error's message with the messages of its causes, each said once: pino's own serializer joins every cause's
 * message after the error's, and an error that quotes its cause (`the PostgreSQL database cannot be reached: connect
 * ECONNREFUSED …`, kept with that cause) came out as `…: connect ECONNREFUSED …: connect ECONNREFUSED …`.
 */
export const messageOnce = (error: Error): string => {
  let message = error.message;
  let cause: unknown = error.cause;
  for (let depth = 0; cause instanceof Error && depth < 8; depth++, cause = cause.cause) {
    if (cause.message !== '' && !message.includes(cause.message)) message = `${message}: ${cause.message}`;
  }
  return message;
};

/** pino's error serializer (type, stack, the error's own fields), with the message said once. */
const errSerializer = (error: unknown) => {
  const serialized = pino.stdSerializers.err(error as Error);
  if (error instanceof Error && serialized !== undefined && typeof serialized === 'object')
    (serialized as { message: string }).message = messageOnce(error);
  return serialized;
};

/**
 * The server's logger: JSON lines on stderr, or readable lines (pino-pretty, loaded only then) when stderr is a
 * terminal, where a person reads them rather than a collector. `fields` go on every line (the pid of each server
 * process of `serve --processes`, whose lines share one stderr).
 */
export const createLogger = async (
  level = 'info',
  pretty = process.stderr.isTTY === true,
  destination: number | string = 2,
  fields?: Readonly<Record<string, unknown>>,
): Promise<Logger> => {
  const options = { level, base: fields, serializers: { err: errSerializer } };
  if (!pretty) return pino(options, pino.destination({ dest: destination, sync: false }));
  const { default: prettyStream } = await import('pino-pretty');
  return pino(options, prettyStream({ destination, sync: true, translateTime: 'SYS:HH:MM:ss.l' }));
};

export const LogLayer = (logger: Logger) => Layer.succeed(Log, logger);

export const silentLogger = (): Logger => pino({ level: 'silent' });

/**
 * Resolves once what was logged so far is written (lines are written asynchronously), or after `boundMs`: for the
 * last line before `process.exit`, which would otherwise be lost.
 */
export const flushLogger = (logger: Logger, boundMs = 1_000): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(resolve, boundMs);
    logger.flush(() => {
      clearTimeout(timer);
      resolve();
    });
  });
