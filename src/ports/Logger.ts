import { Context, Layer } from 'effect';
import { type Logger, pino } from 'pino';

/** Structured logs (JSON lines on stderr). Key material and payload text are never logged. */
export class Log extends Context.Service<Log, Logger>()('airs/Log') {}

export const createLogger = (level: string = process.env.AIRS_LOG_LEVEL ?? 'info'): Logger =>
  pino({ level, base: undefined }, pino.destination({ dest: 2, sync: false }));

export const LogLayer = (logger: Logger) => Layer.succeed(Log, logger);

export const silentLogger = (): Logger => pino({ level: 'silent' });
