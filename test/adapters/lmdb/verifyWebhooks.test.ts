import { rmSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { encodeMap } from '../../../src/adapters/lmdb/codec.js';
import { type LmdbStore, openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { Command } from '../../../src/domain/commands.js';
import { defaultPlans } from '../../../src/domain/plans.js';
import { webhookSecretCredentialKey } from '../../../src/domain/webhook/commands.js';
import { submitCommand } from '../../support/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const endpointId = 'whep_AAAAAAAAAAAAAAAA';
const commands: Command[] = [
  {
    type: 'Account',
    accountId: 'acct_1',
    command: { type: 'CreateAccount', accountId: 'acct_1', email: 'a@example.com', plan: 'free', now: 1 },
  },
  {
    type: 'WebhookEndpoint',
    endpointId,
    command: {
      type: 'AddEndpoint',
      accountId: 'acct_1',
      url: 'https://hooks.example.com/a',
      events: [],
      secretId: 'sec_1',
      secret: 'whsec_one',
      plans: defaultPlans,
      allowHttp: false,
      now: 2,
    },
  },
];

describe("LMDB's replay --verify of webhook endpoints and deliveries", () => {
  let store: LmdbStore;
  let dir: string;
  afterEach(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** An endpoint, a rotated secret, and two requests whose cancellations made deliveries, one of them attempted. */
  const written = async () => {
    dir = tempDataDir('airs-verify-webhooks');
    store = openLmdbStore(dir);
    await store.commit({ commands });
    await store.commit({ commands: [submitCommand('req_a', 10), submitCommand('req_b', 10)] });
    await store.commit({
      commands: [
        { type: 'Cancel', reqId: 'req_a', now: 20 },
        { type: 'Cancel', reqId: 'req_b', now: 20 },
        {
          type: 'WebhookEndpoint',
          endpointId,
          command: { type: 'RotateSecret', accountId: 'acct_1', secretId: 'sec_2', secret: 'whsec_two', now: 21 },
        },
      ],
    });
    const [delivery] = await store.reads.webhookDeliveriesOf(endpointId, { limit: 1 });
    await store.commit({
      commands: [
        {
          type: 'WebhookDelivery',
          deliveryId: delivery?.context.deliveryId ?? '',
          command: { type: 'StartAttempt', owner: 'p', leaseMs: 1_000, now: 30 },
        },
      ],
    });
    store.syncReads.refresh();
    return { dbs: store.databases, deliveryId: delivery?.context.deliveryId ?? '' };
  };

  it('finds nothing to report in what the store wrote, secrets included', async () => {
    await written();
    expect(verifyViews(store.databases).differences).toEqual([]);
  });

  it('names a delivery whose view differs, an index entry missing, and a secret the log does not call for', async () => {
    const { dbs, deliveryId } = await written();
    const view = store.syncReads.webhookDelivery(deliveryId);
    dbs.webhookDeliveries.putSync(deliveryId, encodeMap({ ...view, status: 'delivered' }));
    const [due] = dbs.indexes.webhookDue.getKeys({});
    dbs.indexes.webhookDue.removeSync(due as never);
    dbs.credentials.putSync(webhookSecretCredentialKey('sec_gone'), 'whsec_x');
    expect(verifyViews(store.databases).differences).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^webhook delivery ${deliveryId}: the stored view differs`)),
        expect.stringMatching(/^index webhookDue .*: produced by the log but not stored/),
        expect.stringMatching(/^credential webhookSecret:sec_gone: stored but the log sets no such credential/),
      ]),
    );
  });
});
