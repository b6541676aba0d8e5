import * as Context from 'effect/Context';

/** What the operator allows beyond the safe default (`webhooks.allowHttp`, `webhooks.allowPrivateNetworks`). */
export type WebhookDestinationPolicy = {
  readonly allowHttp: boolean;
  readonly allowPrivateNetworks: boolean;
};

/**
 * Where a webhook URL points, checked on the network: its host resolved now, and every address it resolves to of the
 * public internet unless the policy allows private networks. The app asks this when an endpoint is added; the check
 * itself (DNS, address ranges) is the webhooks adapter's (adapters/webhooks/urlCheck.ts), as the sender applies the
 * same rules at every connect.
 */
export interface WebhookDestinationsShape {
  /** Why no webhook may be sent to `url`, in words for its owner; undefined when it may. Never rejects. */
  problem(url: string, policy: WebhookDestinationPolicy): Promise<string | undefined>;
}

export class WebhookDestinations extends Context.Service<WebhookDestinations, WebhookDestinationsShape>()(
  'airs/WebhookDestinations',
) {}
