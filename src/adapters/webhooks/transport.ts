import type { WebhookTransport } from '../../ports/WebhookTransport.js';
import { createConnectionPools } from './connections.js';
import type { DestinationPolicy } from './destination.js';
import { type SenderOptions, sendWebhook } from './sender.js';

/** The webhook sender's transport: one SSRF-safe attempt per post (sender.ts), under the operator's policy, over
 * connections kept alive per checked address (connections.ts). */
export const httpWebhookTransport = (
  policy: DestinationPolicy & Pick<SenderOptions, 'ca' | 'timeoutMs'>,
): WebhookTransport => {
  const connections = createConnectionPools();
  return async (post) => {
    const { delivered, status, latencyMs, error } = await sendWebhook(post, { ...policy, connections });
    return { delivered, status, latencyMs, error };
  };
};
