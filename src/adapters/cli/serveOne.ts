import cluster from 'node:cluster';
import type { Config } from '../../config.js';
import type { UpstreamCheck } from '../models/upstreamCheck.js';
import { CliError, type Output } from './output.js';

/** How long a stop waits for connections to close after the drain (answers being written) before it goes on. */
const closeMs = 2_000;

/** What a server process forked by `airs serve --processes N` tells its primary. */
export type ServerMessage = { readonly airs: 'listening'; readonly url: string };

export const isServerMessage = (message: unknown): message is ServerMessage =>
  typeof message === 'object' && message !== null && (message as { airs?: unknown }).airs === 'listening';

/** What the primary tells its server processes of the check of the models' upstreams it made at start. */
export type UpstreamsCheckedMessage = { readonly airs: 'upstreams-checked'; readonly checks: readonly UpstreamCheck[] };

const isUpstreamsChecked = (message: unknown): message is UpstreamsCheckedMessage =>
  typeof message === 'object' && message !== null && (message as { airs?: unknown }).airs === 'upstreams-checked';

/** What the primary tells its server processes when one of them died: its leases can be taken up now. */
export type SiblingGoneMessage = { readonly airs: 'sibling-gone'; readonly pid: number };

/** What the primary tells its server processes on SIGHUP: read the config file again and apply it (configReload.ts). */
export type ReloadMessage = { readonly airs: 'reload'; readonly cause: string };

const isReload = (message: unknown): message is ReloadMessage =>
  typeof message === 'object' && message !== null && (message as { airs?: unknown }).airs === 'reload';

export const isSiblingGone = (message: unknown): message is SiblingGoneMessage =>
  typeof message === 'object' && message !== null && (message as { airs?: unknown }).airs === 'sibling-gone';

/**
 * One server process: the HTTP server, the worker pool and the sweeper on the store, until SIGINT or SIGTERM. Alone
 * (`processes` 1) it checks the port, warns of an open data directory and prints the URL; forked by a primary
 * (serveMany.ts), the primary did the first two and prints the URL once every process listens, and the process stops
 * when its primary goes. SIGHUP, the primary's word, or `airs models reload` (the store's notice) has it read its
 * config again (`loadAgain`) and apply the models and plans (configReload.ts).
 */
export const serveOne = async (config: Config, output: Output, loadAgain: () => Promise<Config>) => {
  const forked = cluster.isWorker;
  // Loaded here, not at the top: other commands (ask, keys) start faster without the server's modules.
  const [
    { createLogger, flushLogger, logLevelFromEnv },
    { startApp },
    { listen },
    { listenProblem, listenFailureMessage },
  ] = await Promise.all([
    import('../../ports/Logger.js'),
    import('../../server.js'),
    import('../http/listen.js'),
    import('../http/portCheck.js'),
  ]);
  const logLevel = logLevelFromEnv();
  if ('problem' in logLevel) throw new CliError(`bad configuration: ${logLevel.problem}`, 2);
  const logger = await createLogger(logLevel.level, undefined, undefined, forked ? { pid: process.pid } : undefined);
  if (!forked) {
    // The port before the data directory: a server that cannot listen creates nothing. (A port taken in the moment
    // between this check and the listen below is still refused, after the directory was made.)
    const portProblem = await listenProblem(config.host, config.port);
    if (portProblem !== undefined) throw new CliError(listenFailureMessage(config.host, config.port, portProblem), 2);
    if (config.store.url === undefined) {
      const { openToOthers } = await import('../lmdb/fileModes.js');
      const openWarning = openToOthers(config.dataDir);
      if (openWarning !== undefined) logger.warn({ dataDir: config.dataDir }, openWarning);
    }
  }
  // Forked on LMDB, this process commits through the primary, the data directory's one writer (primaryWriter.ts):
  // every process's batches of a moment share one commit.
  const storeLayer =
    forked && config.store.url === undefined
      ? await (async () => {
          const [{ createRemoteWriter, primaryChannel }, { LmdbStoreLayer }] = await Promise.all([
            import('../ipc/remoteWriter.js'),
            import('../lmdb/LmdbStore.js'),
          ]);
          return LmdbStoreLayer(config.dataDir, { writer: createRemoteWriter(primaryChannel()) });
        })()
      : undefined;
  // Forked, `/metrics` answers for every process: the primary sums their figures (issue 42).
  const metricsAsker = forked
    ? await (async () => {
        const [{ createMetricsAsker }, { primaryChannel }] = await Promise.all([
          import('../ipc/metricsAsker.js'),
          import('../ipc/remoteWriter.js'),
        ]);
        return createMetricsAsker(primaryChannel());
      })()
    : undefined;
  const app = await startApp({
    config,
    logger,
    ...(storeLayer === undefined ? {} : { storeLayer }),
    ...(metricsAsker === undefined ? {} : { gatherMetrics: metricsAsker.gather }),
  });
  metricsAsker?.answerWith(app.metrics.ownFigures);
  let listening: Awaited<ReturnType<typeof listen>>;
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
    throw new CliError(listenFailureMessage(config.host, config.port, error as NodeJS.ErrnoException), 2);
  }
  const { server, url } = listening;
  let stopping = false;
  const stop = async (reason: string) => {
    if (stopping) return;
    stopping = true;
    // A primary that is gone took the shared port with it: nobody can reach this process, so nothing to hold for.
    const delayMs = reason === 'primary gone' ? 0 : config.shutdownDelaySeconds * 1_000;
    const graceMs = config.shutdownGraceSeconds * 1_000;
    logger.info(
      { signal: reason, delaySeconds: delayMs / 1_000, graceSeconds: config.shutdownGraceSeconds },
      'stopping: new calls answer 503 while the calls and model work in flight finish',
    );
    // Whatever happens below, the process ends: a stop that hangs would keep an orchestrator waiting.
    const force = setTimeout(
      () => {
        logger.error({ reason, forced: true }, 'stopped');
        void flushLogger(logger).then(() => process.exit(1));
      },
      delayMs + graceMs + closeMs + 5_000,
    ).unref();
    // From the signal on every call and `/readyz` answer 503 and the pool starts nothing new, but the port stays open
    // for the delay: a load balancer still sending here (it has not seen the failed probe yet) gets a 503 to retry
    // elsewhere, never a refused connection. Then the drain as before.
    app.stopAccepting();
    app.processor.stopTakingWork();
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    if (!(await app.drain(graceMs))) {
      logger.warn(
        {
          calls: app.traffic.inFlight,
          modelCalls: app.processor.inFlight(),
          webhookPosts: app.webhookSender.inFlight(),
        },
        'grace period over: what is still running stops now; model calls and webhook posts are taken up again at the next start',
      );
    }
    // Stops listening and closes the idle keep-alive connections (every call had its answer by now).
    await Promise.race([server.close(), new Promise((resolve) => setTimeout(resolve, closeMs))]);
    await app.close();
    clearTimeout(force);
    logger.info({ reason }, 'stopped');
    await flushLogger(logger);
    process.exit(0);
  };
  // Before the URL is printed: a stop sent as soon as it is read must find the handlers (not the default action,
  // which ends the process without a drain).
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
  const { configReloader } = await import('./configReload.js');
  const reload = configReloader(app.liveConfig, loadAgain, logger);
  process.on('SIGHUP', () => void reload('SIGHUP'));
  // Every server of this data directory or database hears `airs models reload` by itself.
  app.store.notices?.onReloadAsked(() => void reload('airs models reload'));
  if (forked) {
    // A primary that is gone (killed) leaves nobody to stop this process: it stops by itself.
    process.on('disconnect', () => void stop('primary gone'));
    // A sibling died: what it held is taken up now, not once its leases lapse (contract 17).
    process.on('message', (message: unknown) => {
      if (isSiblingGone(message) && !stopping) void app.goneOwners.takeUp();
      if (isReload(message) && !stopping) void reload(message.cause);
      // The primary checked the upstreams once for all its processes: what it found is this one's `/readyz` too.
      if (isUpstreamsChecked(message))
        for (const check of message.checks) app.upstreams.see(check.model, check.problem);
    });
    process.send?.({ airs: 'listening', url } satisfies ServerMessage);
  } else output.out(`airs listening on ${url}/`);
  const { storeLogFields } = await import('../../storeLocation.js');
  logger.info({ config: config.source, ...storeLogFields(config), models: config.models.map((m) => m.id) }, 'started');
  if (!forked) {
    // After the start, not before it: a slow or absent upstream delays neither the URL nor readiness.
    const { checkAtStart } = await import('../models/upstreamCheck.js');
    void checkAtStart(config.models, logger, (check) => app.upstreams.see(check.model, check.problem));
  }
};
