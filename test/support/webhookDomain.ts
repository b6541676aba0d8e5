import type { AccountState } from '../../src/domain/account/state.js';
import { AccountLimitReached, Refused } from '../../src/domain/errors.js';
import { defaultPlans, type PlanName } from '../../src/domain/plans.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import { type DeliveryState, evolveDelivery, initialDeliveryState } from '../../src/domain/webhook/delivery.js';
import { dueDeliveries, requestWebhookEvents } from '../../src/domain/webhook/dueDeliveries.js';
import {
  decideEndpoint,
  evolveEndpoint,
  type WebhookEndpointCommand,
  type WebhookEndpointState,
} from '../../src/domain/webhook/endpoint.js';
import type { WebhookEvent } from '../../src/domain/webhook/events.js';

/** Fixtures of the webhook domain's tests: ids of airs's forms, an account, folds as the store will run them. */
export const accountId = 'acct_AbCdEfGhIjKlMnOp';
export const reqId = 'req_0190f2a0b1c2AbCdEfGhIjKlMnOpQrStUv';
export const endpointIds = ['whep_AAAAAAAAAAAAAAAA', 'whep_BBBBBBBBBBBBBBBB', 'whep_CCCCCCCCCCCCCCCC'] as const;
export const t0 = 1_800_000_000_000;
export const hour = 3_600_000;
export const day = 24 * hour;

export const account = (plan: PlanName = 'free', suspended = false): AccountState => ({
  accountId,
  email: 'a@example.com',
  plan,
  suspended,
  createdAt: t0,
  activeKeys: 1,
});

export const addCommand = (
  overrides: Partial<Extract<WebhookEndpointCommand, { type: 'AddEndpoint' }>> = {},
): WebhookEndpointCommand => ({
  type: 'AddEndpoint',
  endpointId: endpointIds[0],
  account: account(),
  url: 'https://hooks.example.com/airs',
  events: [],
  secretId: 'sec1',
  endpointsOfAccount: 0,
  plans: defaultPlans,
  allowHttp: false,
  now: t0,
  ...overrides,
});

/** Decides and folds as the store does: a refusal is returned and changes nothing. */
export const stepEndpoint = (
  endpointId: string,
  state: WebhookEndpointState | undefined,
  command: WebhookEndpointCommand,
) => {
  const events = decideEndpoint(endpointId, state, command);
  if (events instanceof Refused || events instanceof AccountLimitReached)
    return { state, refused: events, events: [] as WebhookEvent[] };
  return {
    state: events.reduce<WebhookEndpointState | undefined>(evolveEndpoint, state),
    refused: undefined,
    events: events as WebhookEvent[],
  };
};

/** An enabled endpoint of the account, added at `t0`. */
export const enabledEndpoint = (endpointId: string = endpointIds[0], events: string[] = []): WebhookEndpointState =>
  stepEndpoint(endpointId, undefined, addCommand({ endpointId, events: events as never }))
    .state as WebhookEndpointState;

/** The delivery of `reqId`'s `request.completed` to `endpoint`, due at `t0`. */
export const dueDelivery = (endpoint: WebhookEndpointState = enabledEndpoint()) => {
  const [due] = dueDeliveries(
    requestWebhookEvents(
      'processing',
      { type: 'RequestCompleted', reqId, responseChars: 5, at: t0 },
      { reqId, accountId },
    ),
    [endpoint],
    defaultWebhookBackoff.maxTotalMs,
  );
  if (due === undefined) throw new Error('no delivery due');
  return due;
};

export const foldDelivery = (events: readonly WebhookEvent[], from: DeliveryState = initialDeliveryState) =>
  events.reduce<DeliveryState>((state, event) => ('deliveryId' in event ? evolveDelivery(state, event) : state), from);
