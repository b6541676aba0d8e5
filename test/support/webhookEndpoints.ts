import { randomBytes } from 'node:crypto';
import { newWebhookSecret } from '../../src/app/webhooks/signing.js';
import type { Command } from '../../src/domain/commands.js';
import { defaultPlans, type PlanTable } from '../../src/domain/plans.js';
import type { EventFilter } from '../../src/domain/webhook/eventTypes.js';

/** Whatever sends a command and answers its outcome: an app's committer, or a store's `commit` of one command. */
export type SendCommand = (command: Command) => Promise<unknown>;

export const newEndpointId = () => `whep_${randomBytes(12).toString('base64url')}`;
export const newSecretId = () => `whsk_${randomBytes(12).toString('base64url')}`;

const refusedOrFailed = (outcome: unknown) =>
  outcome instanceof Error ? outcome : typeof outcome === 'object' && outcome !== null && !('events' in outcome);

/**
 * Adds a webhook endpoint as `airs webhooks add` will (its command, decided in the store's write), returning its id and
 * signing secret. Until the Webhooks service lands, tests add endpoints with this.
 */
export const addWebhookEndpoint = async (
  send: SendCommand,
  input: {
    readonly accountId: string;
    readonly url: string;
    readonly events?: EventFilter;
    readonly plans?: PlanTable;
    readonly now?: number;
  },
) => {
  const endpointId = newEndpointId();
  const secretId = newSecretId();
  const secret = newWebhookSecret();
  const outcome = await send({
    type: 'WebhookEndpoint',
    endpointId,
    command: {
      type: 'AddEndpoint',
      accountId: input.accountId,
      url: input.url,
      events: input.events ?? [],
      secretId,
      secret,
      plans: input.plans ?? defaultPlans,
      allowHttp: true,
      now: input.now ?? Date.now(),
    },
  });
  if (refusedOrFailed(outcome)) throw new Error(`endpoint not added: ${String((outcome as Error).message)}`);
  return { endpointId, secretId, secret };
};

/** Rotates an endpoint's secret; returns the new one (the old one still signs for 24 hours). */
export const rotateWebhookSecret = async (
  send: SendCommand,
  input: { readonly accountId: string; readonly endpointId: string; readonly now?: number },
) => {
  const secretId = newSecretId();
  const secret = newWebhookSecret();
  const outcome = await send({
    type: 'WebhookEndpoint',
    endpointId: input.endpointId,
    command: { type: 'RotateSecret', accountId: input.accountId, secretId, secret, now: input.now ?? Date.now() },
  });
  if (refusedOrFailed(outcome)) throw new Error(`secret not rotated: ${String((outcome as Error).message)}`);
  return { secretId, secret };
};

/** Removes an endpoint. */
export const removeWebhookEndpoint = async (
  send: SendCommand,
  input: { readonly accountId: string; readonly endpointId: string; readonly now?: number },
) => {
  const outcome = await send({
    type: 'WebhookEndpoint',
    endpointId: input.endpointId,
    command: { type: 'RemoveEndpoint', accountId: input.accountId, now: input.now ?? Date.now() },
  });
  if (refusedOrFailed(outcome)) throw new Error(`endpoint not removed: ${String((outcome as Error).message)}`);
};
