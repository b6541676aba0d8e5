import cluster, { type Worker } from 'node:cluster';
import { type Config, webhookRetentionMs } from '../../config.js';
import type { UpstreamCheck } from '../models/upstreamCheck.js';
import { CliError, type Output } from './output.js';
import {
  isServerMessage,
  type ReloadMessage,
  type SiblingGoneMessage,
  type UpstreamsCheckedMessage,
} from './serveOne.js';

/** A server process that dies is replaced after this long, doubling while they keep dying, up to `maxRespawnMs`. */
const firstRespawnMs = 1_000;
const maxRespawnMs = 30_000;
/** A replacement that has run this long resets the doubling. */
const stableMs = 60_000;

/**
 * `airs serve --processes N`: this process (the primary) serves nothing itself. It checks the port, forks N server
 * processes (serveOne.ts) that share the port (node:cluster hands each connection to one of them) and the store,
 * prints the URL once all of them listen, replaces one that dies, and on SIGINT or SIGTERM stops them all (each
 * drains as a single server does) and exits when they have. The first process starts alone, so that the store is
 * created or migrated once; a process that fails to start (a damaged data directory, a bad model secret) stops the
 * whole start with its own exit status. SIGHUP is passed on to every server process, which reloads its config.
 */
export const serveMany = async (config: Config, output: Output): Promise<void> => {
  const [{ createLogger, flushLogger, logLevelFromEnv }, { listenProblem, listenFailureMessage }, { openToOthers }] =
    await Promise.all([
      import('../../ports/Logger.js'),
      import('../http/portCheck.js'),
      import('../lmdb/fileModes.js'),
    ]);
  const logLevel = logLevelFromEnv();
  if ('problem' in logLevel) throw new CliError(`bad configuration: ${logLevel.problem}`, 2);
  const logger = await createLogger(logLevel.level);
  const portProblem = await listenProblem(config.host, config.port);
  if (portProblem !== undefined) throw new CliError(listenFailureMessage(config.host, config.port, portProblem), 2);
  const openWarning = config.store.url === undefined ? openToOthers(config.dataDir) : undefined;
  if (openWarning !== undefined) logger.warn({ dataDir: config.dataDir }, openWarning);

  // On LMDB, this process is the data directory's one writer: the server processes send it their batches, and it
  // commits those of a moment together (primaryWriter.ts). Structured clone (advanced) carries them as they are.
  cluster.setupPrimary({ serialization: 'advanced' });
  const writer =
    config.store.url === undefined
      ? (await import('./primaryWriter.js')).createPrimaryWriter(config.dataDir, logger, {
          webhookRetentionMs: webhookRetentionMs(config.webhooks),
        })
      : undefined;
  const listening = new Set<Worker>();
  // A scrape taken by any server process is answered with the sum over all of them (issue 42).
  const metrics = (await import('../ipc/metricsGatherer.js')).createMetricsGatherer(() => listening, logger);
  let stopping = false;
  let respawnMs = firstRespawnMs;
  let lastRespawn = 0;
  /** The check of the upstreams made once at start, told to every server process (a replacement too). */
  let checked: UpstreamsCheckedMessage | undefined;
  const tellChecked = (worker: Worker) => {
    if (checked !== undefined && worker.isConnected()) worker.send(checked, undefined, () => {});
  };

  /** Forks one server process; resolves once it listens, rejects with its exit status if it ends before. */
  const fork = () =>
    new Promise<string>((resolve, reject) => {
      const worker = cluster.fork();
      writer?.attach(worker);
      metrics.attach(worker);
      worker.on('message', (message: unknown) => {
        if (!isServerMessage(message)) return;
        listening.add(worker);
        tellChecked(worker);
        resolve(message.url);
      });
      worker.on('exit', (code, signal) => {
        const wasListening = listening.delete(worker);
        if (!wasListening) {
          reject(code ?? 1);
          return;
        }
        if (stopping) return;
        // Died while serving: the others go on serving; a replacement takes its place.
        logger.warn({ pid: worker.process.pid, code, signal }, 'a server process died; starting another');
        // The others take up its leases at once (it is gone: each of them can tell), before its replacement starts.
        const gone: SiblingGoneMessage = { airs: 'sibling-gone', pid: worker.process.pid ?? 0 };
        for (const other of listening) {
          if (other.isConnected()) other.send(gone, undefined, () => {});
        }
        const now = Date.now();
        respawnMs = now - lastRespawn > stableMs ? firstRespawnMs : Math.min(maxRespawnMs, respawnMs * 2);
        lastRespawn = now;
        setTimeout(() => {
          if (!stopping) void fork().catch((status) => logger.error({ status }, 'a replacement failed to start'));
        }, respawnMs).unref();
      });
    });

  const stopAll = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal, processes: listening.size }, 'stopping every server process');
    const force = setTimeout(
      () => {
        for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
        logger.error({ reason: signal, forced: true }, 'stopped');
        void flushLogger(logger).then(() => process.exit(1));
      },
      (config.shutdownDelaySeconds + config.shutdownGraceSeconds + 10) * 1_000,
    ).unref();
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    let failed = false;
    let closing = false;
    const check = () => {
      if (closing || Object.keys(cluster.workers ?? {}).length > 0) return;
      closing = true;
      // Every server process is gone: what they sent is committed, then the store closes.
      void (writer?.close() ?? Promise.resolve())
        .catch((error: unknown) => {
          failed = true;
          logger.error({ err: error }, 'closing the store failed');
        })
        .finally(() => {
          clearTimeout(force);
          logger.info({ reason: signal, ...(failed ? { failed } : {}) }, 'stopped');
          void flushLogger(logger).then(() => process.exit(failed ? 1 : 0));
        });
    };
    cluster.on('exit', (_worker, code) => {
      // One that had not started yet ends by the signal itself (code null): not a failure.
      if (code !== null && code !== 0) failed = true;
      check();
    });
    check();
  };
  process.on('SIGINT', () => stopAll('SIGINT'));
  process.on('SIGTERM', () => stopAll('SIGTERM'));
  // A reload is each server process's own (each holds its models and plans): the primary passes the signal on, and
  // each process reads the file and logs what it applied. One started later reads the file as it is then.
  process.on('SIGHUP', () => {
    if (stopping) return;
    const reload: ReloadMessage = { airs: 'reload', cause: 'SIGHUP' };
    for (const worker of listening) if (worker.isConnected()) worker.send(reload, undefined, () => {});
    logger.info({ processes: listening.size }, 'SIGHUP: every server process reads the config file again');
  });

  let url: string;
  try {
    url = await fork();
    await writer?.open();
    await Promise.all(Array.from({ length: config.processes - 1 }, fork));
  } catch (status) {
    // The server process said why on stderr: the others stop, and the start ends with its status, saying no more.
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    // The writer could not open the store (a server process had opened it): said here, as no process said it.
    if (status instanceof Error) throw new CliError(`cannot open the store: ${status.message}`, 1);
    throw new CliError('', typeof status === 'number' && status !== 0 ? status : 1);
  }
  output.out(`airs listening on ${url}/`);
  const { storeLogFields } = await import('../../storeLocation.js');
  logger.info({ processes: config.processes, config: config.source, ...storeLogFields(config) }, 'started');
  // Once for all the server processes, not once by each: one line per problem, and one call per upstream.
  const { checkAtStart } = await import('../models/upstreamCheck.js');
  const checks: readonly UpstreamCheck[] = await checkAtStart(config.models, logger, () => {});
  checked = { airs: 'upstreams-checked', checks };
  for (const worker of listening) tellChecked(worker);
};
