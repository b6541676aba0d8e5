import { Layer } from 'effect';
import { AccountsLayer } from '../../app/Accounts.js';
import { AppConfigLayer } from '../../app/AppConfig.js';
import { CommitterLayer } from '../../app/Committer.js';
import { StorageHealthLayer } from '../../app/StorageHealth.js';
import type { Config } from '../../config.js';
import { AppClock, systemClock } from '../../ports/Clock.js';
import { Ids, randomIds } from '../../ports/Ids.js';
import { LogLayer, silentLogger } from '../../ports/Logger.js';
import { LmdbStoreLayer } from '../lmdb/LmdbStore.js';

/**
 * What a management command runs on: the accounts service over the store, committer, clock and ids, with no
 * workers, no sweeper and no free-space floor (an operator's command on a nearly full disk should still work).
 * The same ground as `managementLayer` in src/server.ts, built here so that a command does not load the server's
 * modules (HTTP, model providers: a third of a command's start-up time).
 */
export const cliManagementLayer = (config: Config) =>
  AccountsLayer.pipe(
    Layer.provideMerge(
      CommitterLayer().pipe(
        Layer.provideMerge(
          StorageHealthLayer({ minFreeBytes: 0, readFreeBytes: async () => Number.POSITIVE_INFINITY }),
        ),
        Layer.provideMerge(
          Layer.mergeAll(
            AppConfigLayer(config),
            LmdbStoreLayer(config.dataDir),
            Layer.succeed(AppClock, systemClock),
            Layer.succeed(Ids, randomIds),
            LogLayer(silentLogger()),
          ),
        ),
      ),
    ),
  );
