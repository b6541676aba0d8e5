import { afterEach, describe } from 'vitest';
import { contractOf } from './contract.js';
import { accountBoundFeatures } from './features/accountBounds.js';
import { accountLimitFeatures } from './features/accountLimits.js';
import { adminKeyFeatures } from './features/adminKeys.js';
import { batchFeatures } from './features/batches.js';
import { batchFailureFeatures } from './features/batchFailures.js';
import { batchStorageFeatures } from './features/batchStorage.js';
import { concurrentWriterFeatures } from './features/concurrentWriters.js';
import { fileBoundFeatures } from './features/fileBounds.js';
import { fileBytesFeatures } from './features/fileBytes.js';
import { hourlyUsageFeatures } from './features/hourlyUsage.js';
import { idempotencyFeatures } from './features/idempotency.js';
import { indexFeatures } from './features/indexes.js';
import { leaseFeatures } from './features/leases.js';
import { limitFeatures } from './features/limits.js';
import { onChangeFeatures } from './features/onChange.js';
import { openBatchFeatures } from './features/openBatches.js';
import { orderingFeatures } from './features/ordering.js';
import { ownLimitFeatures } from './features/ownLimits.js';
import { queuedCountFeatures } from './features/queuedCount.js';
import { readFeatures } from './features/reads.js';
import { reopenFeatures } from './features/reopen.js';
import { rollbackFeatures } from './features/rollback.js';
import { throttleFeatures } from './features/throttle.js';
import { tokenUseFeatures } from './features/tokenUse.js';
import { upstreamCountFeatures } from './features/upstreamCounts.js';
import { upstreamPlaceFeatures } from './features/upstreamPlaces.js';
import { visibilityFeatures } from './features/visibility.js';
import { webhookRecoveryFeatures } from './features/webhookRecovery.js';
import { webhookFeatures } from './features/webhooks.js';
import type { StoreFactory } from './storeFactory.js';

/**
 * The storage contract: what every adapter of the Store port (ports/Store.ts, ports/WorkQueue.ts) must do, written
 * once against the port alone, after Emmett's event-store feature tests and BullMQ's backend tests. A runner file per
 * adapter (lmdb.test.ts, memory.test.ts) calls this with its factory (storeFactory.ts); a capability an adapter
 * cannot have (another process, reopening, a failing disk) skips the tests that need it, with its reason in their
 * names. docs/architecture.md ("The storage contract") says how a new adapter plugs in.
 */
export const describeStoreContract = (factory: StoreFactory) =>
  describe(`The ${factory.name} store keeps the storage contract`, () => {
    afterEach(() => factory.dispose());
    const contract = contractOf(factory);
    orderingFeatures(contract);
    rollbackFeatures(contract);
    // Early: its failing-disk test's teardown (PostgreSQL: DROP TABLESPACE) forces a checkpoint, which takes longer
    // with every database the tests before it made.
    fileBytesFeatures(contract);
    concurrentWriterFeatures(contract);
    leaseFeatures(contract);
    accountBoundFeatures(contract);
    limitFeatures(contract);
    throttleFeatures(contract);
    idempotencyFeatures(contract);
    indexFeatures(contract);
    reopenFeatures(contract);
    visibilityFeatures(contract);
    readFeatures(contract);
    tokenUseFeatures(contract);
    hourlyUsageFeatures(contract);
    onChangeFeatures(contract);
    batchFeatures(contract);
    openBatchFeatures(contract);
    batchFailureFeatures(contract);
    accountLimitFeatures(contract);
    ownLimitFeatures(contract);
    fileBoundFeatures(contract);
    batchStorageFeatures(contract);
    queuedCountFeatures(contract);
    webhookFeatures(contract);
    webhookRecoveryFeatures(contract);
    upstreamPlaceFeatures(contract);
    upstreamCountFeatures(contract);
    adminKeyFeatures(contract);
  });
