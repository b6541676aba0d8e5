import type { Command } from 'commander';
import { type StoreOptions, serveConfigOrFail, withStoreOptions } from './context.js';
import { CliError, type Output } from './output.js';
import { DataDirInUse, type ServeLock, takeServeLock } from './serveLock.js';

/** How long a stop waits for connections to close after the drain (answers being written) before it goes on. */
const closeMs = 2_000;

/** `airs serve`: the HTTP server, the worker pool and the sweeper, until SIGINT or SIGTERM. */
export const registerServeCommand = (program: Command, output: Output) => {
  withStoreOptions(program.command('serve'))
    .description('run the server; prints the URL it listens on (each setting: flag, else environment, else config)')
    .option(
      '--port <port>',
      'the port to listen on, 0 for any free one (default: $PORT, else port of the config, else 8080)',
    )
    .option('--host <host>', 'the address to listen on (default: $HOST, else host of the config, else 127.0.0.1)')
    .action(async (options: StoreOptions & { port?: string; host?: string }) => {
      // Flags win over the environment, which wins over the config file.
      const config = await serveConfigOrFail(options);
      // Loaded here, not at the top: other commands (ask, keys) start faster without the server's modules.
      const [{ createLogger, logLevelFromEnv }, { startApp }, { listen }, { listenProblem, listenFailureMessage }] =
        await Promise.all([
          import('../../ports/Logger.js'),
          import('../../server.js'),
          import('../http/listen.js'),
          import('../http/portCheck.js'),
        ]);
      const logLevel = logLevelFromEnv();
      if ('problem' in logLevel) throw new CliError(`bad configuration: ${logLevel.problem}`, 2);
      const logger = await createLogger(logLevel.level);
      // The port before the data directory: a server that cannot listen creates nothing. (A port taken in the moment
      // between this check and the listen below is still refused, after the directory was made.)
      const portProblem = await listenProblem(config.host, config.port);
      if (portProblem !== undefined) throw new CliError(listenFailureMessage(config.host, config.port, portProblem), 2);
      const { openToOthers } = await import('../lmdb/fileModes.js');
      const openWarning = openToOthers(config.dataDir);
      if (openWarning !== undefined) logger.warn({ dataDir: config.dataDir }, openWarning);
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
          limits: config.http,
          log: logger,
        });
      } catch (error) {
        await app.close();
        lock.release();
        throw new CliError(listenFailureMessage(config.host, config.port, error as NodeJS.ErrnoException), 2);
      }
      const { server, url } = listening;
      let stopping = false;
      const stop = async (signal: string) => {
        if (stopping) return;
        stopping = true;
        const graceMs = config.shutdownGraceSeconds * 1_000;
        logger.info(
          { signal, graceSeconds: config.shutdownGraceSeconds },
          'stopping: new calls answer 503 while the calls and model work in flight finish',
        );
        // Whatever happens below, the process ends: a stop that hangs would keep an orchestrator waiting.
        const force = setTimeout(() => process.exit(1), graceMs + closeMs + 5_000).unref();
        if (!(await app.drain(graceMs))) {
          logger.warn(
            { calls: app.traffic.inFlight, modelCalls: app.processor.inFlight() },
            'grace period over: what is still running stops now; model calls are taken up again at the next start',
          );
        }
        // Stops listening and closes the idle keep-alive connections (every call had its answer by now).
        await Promise.race([server.close(), new Promise((resolve) => setTimeout(resolve, closeMs))]);
        await app.close();
        lock.release();
        clearTimeout(force);
        logger.flush();
        process.exit(0);
      };
      // Before the URL is printed: a stop sent as soon as it is read must find the handlers (not the default action,
      // which ends the process without a drain).
      process.on('SIGINT', () => void stop('SIGINT'));
      process.on('SIGTERM', () => void stop('SIGTERM'));
      output.out(`airs listening on ${url}/`);
      logger.info(
        { config: config.source, dataDir: config.dataDir, models: config.models.map((m) => m.id) },
        'started',
      );
    });
};
