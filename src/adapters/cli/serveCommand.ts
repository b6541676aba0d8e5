import type { Command } from 'commander';
import { checkModelSecrets } from '../../config.js';
import { configOrFail } from './context.js';
import { CliError, type Output } from './output.js';
import { DataDirInUse, type ServeLock, takeServeLock } from './serveLock.js';

/** How long a stop waits for calls and model work in flight before it closes the store anyway. */
const drainMs = 10_000;

/** `airs serve`: the HTTP server, the worker pool and the sweeper, until SIGINT or SIGTERM. */
export const registerServeCommand = (program: Command, output: Output) => {
  program
    .command('serve')
    .description('run the server (config: $AIRS_CONFIG or ./airs.config.json; PORT, HOST, AIRS_DATA_DIR)')
    .action(async () => {
      const config = configOrFail();
      try {
        checkModelSecrets(config);
      } catch (error) {
        throw new CliError(`bad configuration: ${(error as Error).message}`, 2);
      }
      // Loaded here, not at the top: other commands (ask, keys) start faster without the server's modules.
      const [{ createLogger, logLevelFromEnv }, { startApp }, { listen }] = await Promise.all([
        import('../../ports/Logger.js'),
        import('../../server.js'),
        import('../http/listen.js'),
      ]);
      const logLevel = logLevelFromEnv();
      if ('problem' in logLevel) throw new CliError(`bad configuration: ${logLevel.problem}`, 2);
      const logger = createLogger(logLevel.level);
      let lock: ServeLock;
      try {
        lock = takeServeLock(config.dataDir);
      } catch (error) {
        if (error instanceof DataDirInUse) throw new CliError(error.message, 2);
        throw error;
      }
      let app: Awaited<ReturnType<typeof startApp>>;
      try {
        app = await startApp({ config, logger });
      } catch (error) {
        lock.release();
        throw error;
      }
      let listening: Awaited<ReturnType<typeof import('../http/listen.js').listen>>;
      try {
        listening = await listen(app.http, {
          port: config.port,
          hostname: config.host,
          maxBodyBytes: config.maxBodyBytes,
        });
      } catch (error) {
        await app.close();
        lock.release();
        const reason = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
        throw new CliError(`cannot listen on ${config.host}:${config.port} (${reason})`);
      }
      const { server, url } = listening;
      output.out(`airs listening on ${url}/`);
      logger.info(
        { config: config.source, dataDir: config.dataDir, models: config.models.map((m) => m.id) },
        'started',
      );
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'stopping');
        const force = setTimeout(() => process.exit(1), drainMs + 5_000).unref();
        app.stopAccepting();
        await Promise.race([server.close(), new Promise((resolve) => setTimeout(resolve, drainMs))]);
        await app.close();
        lock.release();
        clearTimeout(force);
        logger.flush();
        process.exit(0);
      };
      process.on('SIGINT', () => void stop('SIGINT'));
      process.on('SIGTERM', () => void stop('SIGTERM'));
    });
};
