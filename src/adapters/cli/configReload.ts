import type { Logger } from 'pino';
import { configChanges } from '../../app/configChanges.js';
import type { LiveConfigShape } from '../../app/LiveConfig.js';
import type { Config } from '../../config.js';

/**
 * A server's reload (contract 19, "Changes without a restart"): the config file is read again exactly as at start
 * (`load`: the same flags, environment and checks), and its `models` and `plans` are applied. A file that does not
 * load changes nothing and the log says why; other settings that differ are named, not applied (they need a restart).
 * `cause`: what asked (`SIGHUP`, `airs models reload`). Reloads run one at a time; one asked meanwhile runs after.
 */
export const configReloader = (live: LiveConfigShape, load: () => Promise<Config>, logger: Logger) => {
  let running: Promise<void> = Promise.resolve();
  const reload = async (cause: string) => {
    let next: Config;
    try {
      next = await load();
    } catch (error) {
      logger.error(
        { cause, config: live.config.source, problem: (error as Error).message },
        'config not reloaded: the file does not validate; nothing changed',
      );
      return;
    }
    const changes = configChanges(live.config, next);
    if (changes.needRestart.length > 0)
      logger.warn(
        { cause, config: next.source, keys: changes.needRestart },
        'config reload: these settings need a restart and were not applied',
      );
    // Accounts left on a plan the file no longer defines are held to the free plan's limits (docs/decisions.md).
    const removedPlans = Object.keys(live.config.plans).filter((plan) => !Object.hasOwn(next.plans, plan));
    if (removedPlans.length > 0)
      logger.warn(
        { cause, config: next.source, plans: removedPlans },
        "config reload: these plans are no longer defined; accounts on them are held to the free plan's limits until moved",
      );
    live.apply(next);
    logger.info(
      {
        cause,
        config: next.source,
        models: next.models.map((model) => model.id),
        added: changes.added,
        removed: changes.removed,
        changed: changes.changed,
        plans: changes.plans,
      },
      'config reloaded: models and plans applied',
    );
  };
  return (cause: string): Promise<void> => {
    running = running.then(() => reload(cause));
    return running;
  };
};
