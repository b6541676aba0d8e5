/**
 * Child process: adds a webhook endpoint to an account by committing the `WebhookEndpoint` `AddEndpoint` command
 * through the project's store API, as the Webhooks service does, while no server runs. The bench uses it only where
 * the built CLI has no `airs webhooks add` yet (webhookEndpoints.ts tries the CLI first).
 *
 * Usage (with the sandbox's AIRS_CONFIG and AIRS_DATA_DIR): node addWebhookEndpoint.js '{"accountId":…,"url":…}'
 * Prints one JSON line: {id, url, secret}.
 */
import { randomBytes } from 'node:crypto';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import { newWebhookSecret } from '../../src/app/webhooks/signing.js';
import { loadConfig } from '../../src/config.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as { readonly accountId: string; readonly url: string };
const config = loadConfig();
const store = openLmdbStore(config.dataDir, { webhookRetentionMs: config.webhooks.retentionMs });

// The forms the Ids service gives them (96 random bits, base64url).
const endpointId = `whep_${randomBytes(12).toString('base64url')}`;
const secret = newWebhookSecret();

const main = async () => {
  const [outcome] = await store.commit({
    commands: [
      {
        type: 'WebhookEndpoint',
        endpointId,
        command: {
          type: 'AddEndpoint',
          accountId: spec.accountId,
          url: spec.url,
          events: [],
          secretId: `whsk_${randomBytes(12).toString('base64url')}`,
          secret,
          plans: config.plans,
          allowHttp: config.webhooks.allowHttp,
          now: Date.now(),
        },
      },
    ],
  });
  if (outcome === undefined || !('events' in outcome)) throw outcome ?? new Error('no outcome');
  await store.close();
  process.stdout.write(`${JSON.stringify({ id: endpointId, url: spec.url, secret })}\n`);
};

main().catch((error: unknown) => {
  process.stderr.write(`adding the webhook endpoint failed: ${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
