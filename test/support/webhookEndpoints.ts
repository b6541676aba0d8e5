import { Effect } from 'effect';
import type { WebhooksShape } from '../../src/app/webhooks/Webhooks.js';

/** Whatever holds the Webhooks service (an app started in-process). */
type WithWebhooks = { readonly webhooks: WebhooksShape };

/** Adds a webhook endpoint as `airs webhooks add` does (the URL checked, the plan's bound counted in the write);
 * returns its id and its signing secret, shown this once. */
export const addWebhookEndpoint = async (
  app: WithWebhooks,
  input: { readonly accountId: string; readonly url: string; readonly events?: readonly string[] },
) => {
  const added = await Effect.runPromise(app.webhooks.add(input.accountId, input.url, input.events ?? []));
  return { endpointId: added.endpoint.endpointId, secret: added.secret };
};

/** Rotates an endpoint's secret; returns the new one (the old one still signs for 24 hours). */
export const rotateWebhookSecret = async (
  app: WithWebhooks,
  input: { readonly accountId: string; readonly endpointId: string },
) => {
  const rotated = await Effect.runPromise(app.webhooks.rotateSecret(input.accountId, input.endpointId));
  return { secret: rotated.secret };
};

/** Removes an endpoint: it receives nothing more. */
export const removeWebhookEndpoint = async (
  app: WithWebhooks,
  input: { readonly accountId: string; readonly endpointId: string },
) => {
  await Effect.runPromise(app.webhooks.remove(input.accountId, input.endpointId));
};
