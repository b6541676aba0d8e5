import type { WebhookTransport } from '../../ports/WebhookTransport.js';
import type { DestinationPolicy } from './destination.js';
import { type SenderOptions, sendWebhook } from './sender.js';

/** The webhook sender's transport: one SSRF-safe attempt per post (sender.ts), under the operator's policy. */
export const httpWebhookTransport =
  (policy: DestinationPolicy & Pick<SenderOptions, 'ca' | 'timeoutMs'>): WebhookTransport =>
  async (post) => {
    const { delivered, status, latencyMs, error } = await sendWebhook(post, policy);
    return { delivered, status, latencyMs, error };
  };
