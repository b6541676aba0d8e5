import { effectiveLimits } from '../account/limits.js';
import type { AccountState } from '../account/state.js';
import { AccountLimitReached, Refused } from '../errors.js';
import { controlCharacters } from '../identifiers.js';
import type { PlanTable } from '../plans.js';
import type { WebhookEndpointEvent, WebhookEvent } from './events.js';
import type { EventFilter } from './eventTypes.js';

/** How long a replaced secret still signs (issue 30: 24 hours), and how long an endpoint fails before it is disabled. */
export const rotationOverlapMs = 24 * 3_600_000;
export const disableAfterFailingMs = 3 * 86_400_000;

/** The longest endpoint URL taken, in characters: far beyond any real one, and small enough to show and to store. */
export const maxWebhookUrlLength = 2_048;

export type EndpointStatus = 'enabled' | 'disabled' | 'removed';

/** An endpoint as its events leave it. A removed one is kept (as `removed`): its deliveries must know it is gone. */
export type WebhookEndpointState = {
  readonly endpointId: string;
  readonly accountId: string;
  readonly url: string;
  readonly events: EventFilter;
  readonly status: EndpointStatus;
  readonly createdAt: number;
  /** The secret that signs now, and the one it replaced while it still signs too (until `validUntil`). */
  readonly secretId: string;
  readonly previousSecret?: { readonly secretId: string; readonly validUntil: number };
  /** When its current run of failed attempts began (its first failure since its last delivery); absent: none. */
  readonly failingSince?: number;
  readonly lastDeliveredAt?: number;
  /** Its last recovery: the first delivered attempt after a run of failures (recovery.ts), and when that run began. */
  readonly recoveredAt?: number;
  readonly recoveredFrom?: number;
  readonly disabledAt?: number;
  readonly removedAt?: number;
};

/**
 * Fold step of one endpoint: its own events, and the outcomes of its deliveries (which tell whether it is failing).
 * A delivered attempt ends a run of failures; the first failure after one starts it. An endpoint disabled or removed
 * keeps its run as it was: only enabling starts afresh.
 */
export const evolveEndpoint = (
  state: WebhookEndpointState | undefined,
  event: WebhookEvent,
): WebhookEndpointState | undefined => {
  if (event.type === 'WebhookEndpointAdded') {
    if (state !== undefined) return state;
    const { endpointId, accountId, url, events, secretId, at } = event;
    return { endpointId, accountId, url, events, secretId, status: 'enabled', createdAt: at };
  }
  if (state === undefined || state.status === 'removed') return state;
  switch (event.type) {
    case 'WebhookEndpointRemoved':
      return { ...state, status: 'removed', removedAt: event.at };
    case 'WebhookSecretRotated':
      return {
        ...state,
        secretId: event.secretId,
        previousSecret: { secretId: event.previousSecretId, validUntil: event.previousValidUntil },
      };
    case 'WebhookEndpointDisabled':
      return { ...state, status: 'disabled', disabledAt: event.at };
    case 'WebhookEndpointEnabled': {
      const { failingSince: _run, disabledAt: _at, ...rest } = state;
      return { ...rest, status: 'enabled' };
    }
    case 'WebhookDelivered': {
      const { failingSince: _run, ...rest } = state;
      return { ...rest, lastDeliveredAt: event.at };
    }
    case 'WebhookEndpointRecovered':
      return { ...state, recoveredAt: event.at, recoveredFrom: event.failingSince };
    case 'WebhookAttemptFailed':
      return state.failingSince === undefined && state.status === 'enabled'
        ? { ...state, failingSince: event.at }
        : state;
    case 'WebhookDeliveryGaveUp':
      // Its last failed attempt counts as a failure like any other (a delivery given up without an attempt does not).
      return event.attempt !== undefined && state.failingSince === undefined && state.status === 'enabled'
        ? { ...state, failingSince: event.at }
        : state;
    default:
      return state;
  }
};

/** The secrets that sign a delivery sent at `at`: the current one, and the replaced one within its 24 hours. */
export const signingSecretIds = (state: WebhookEndpointState, at: number): readonly string[] =>
  state.previousSecret !== undefined && at < state.previousSecret.validUntil
    ? [state.secretId, state.previousSecret.secretId]
    : [state.secretId];

/** Whether the endpoint takes the plan's bound (removed ones do not). */
export const countsTowardLimit = (state: WebhookEndpointState | undefined): boolean =>
  state !== undefined && state.status !== 'removed';

/** Whether it is sent anything now: new deliveries and attempts go to enabled endpoints only. */
export const receivesDeliveries = (state: WebhookEndpointState | undefined): boolean =>
  state !== undefined && state.status === 'enabled';

/**
 * Whether its last attempt was delivered: what earns an endpoint more than one of a sender's places at once (issue 40).
 * A new endpoint has not answered yet, and a failing one (a timeout, an error status, a refused connection) has not
 * answered since it began failing: each waits on one place until an attempt is delivered.
 */
export const answersDeliveries = (state: WebhookEndpointState): boolean =>
  state.lastDeliveredAt !== undefined && state.failingSince === undefined;

/**
 * What is wrong with an endpoint URL, if anything: an absolute `https://` URL (`http://` too when the operator
 * allows it), with a host, no user name or password in it (it would be sent along and shown in lists), no fragment,
 * no control character, at most 2,048 characters. Where the host points is checked by the sender, at add time and at
 * every connect (no private address unless allowed): that needs DNS, which the domain does not do.
 */
export const webhookUrlProblem = (url: string, options: { readonly allowHttp: boolean }): string | undefined => {
  if (url.length > maxWebhookUrlLength)
    return `a webhook URL has at most ${maxWebhookUrlLength} characters; this one has ${url.length}`;
  if (controlCharacters.test(url) || /\s/.test(url))
    return 'a webhook URL must not contain spaces or control characters';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `"${url.slice(0, 100)}" is not an absolute URL (such as https://example.com/webhooks)`;
  }
  if (parsed.protocol !== 'https:' && !(options.allowHttp && parsed.protocol === 'http:'))
    return options.allowHttp
      ? 'a webhook URL must start with https:// or http://'
      : 'a webhook URL must start with https:// (the operator has not allowed http: webhooks.allowHttp)';
  if (parsed.hostname === '') return 'a webhook URL must name a host';
  if (parsed.username !== '' || parsed.password !== '') return 'a webhook URL must not contain a user name or password';
  if (parsed.hash !== '') return 'a webhook URL must not contain a fragment (#...)';
  return undefined;
};

export type WebhookEndpointCommand =
  | {
      readonly type: 'AddEndpoint';
      readonly endpointId: string;
      /** The account as the write finds it (its plan and whether it is suspended). */
      readonly account: AccountState | undefined;
      readonly url: string;
      readonly events: EventFilter;
      /** Where the store keeps the new secret (the secret travels beside the event, to the store's credentials). */
      readonly secretId: string;
      /** The account's endpoints not removed, counted inside the write (so two adds at once cannot both pass). */
      readonly endpointsOfAccount: number;
      readonly plans: PlanTable;
      readonly allowHttp: boolean;
      readonly now: number;
    }
  /** By its account (`accountId`); another account's endpoint is answered as unknown. */
  | { readonly type: 'RemoveEndpoint'; readonly accountId: string; readonly now: number }
  | { readonly type: 'RotateSecret'; readonly accountId: string; readonly secretId: string; readonly now: number }
  | { readonly type: 'EnableEndpoint'; readonly accountId: string; readonly now: number };

const unknownEndpoint = (endpointId: string) => new Refused({ message: `no webhook endpoint ${endpointId}` });

/**
 * Decides an endpoint command against the endpoint's state. As for keys, asking for what already holds (remove a
 * removed endpoint, enable an enabled one) succeeds with no events, so scripts may repeat themselves. Disabling is
 * no command: it follows from failed deliveries (delivery.ts).
 */
export const decideEndpoint = (
  endpointId: string,
  state: WebhookEndpointState | undefined,
  command: WebhookEndpointCommand,
): readonly WebhookEndpointEvent[] | Refused | AccountLimitReached => {
  const at = command.now;
  if (command.type === 'AddEndpoint') {
    if (state !== undefined) return new Refused({ message: `webhook endpoint ${endpointId} already exists` });
    const { account } = command;
    if (account === undefined) return new Refused({ message: 'no such account' });
    if (account.suspended)
      return new Refused({ message: `account ${account.accountId} is suspended: no webhook endpoint can be added` });
    const problem = webhookUrlProblem(command.url, { allowHttp: command.allowHttp });
    if (problem !== undefined) return new Refused({ message: problem });
    const limit = effectiveLimits(command.plans, account).maxWebhookEndpoints;
    if (command.endpointsOfAccount >= limit)
      return new AccountLimitReached({
        message: `the ${account.plan} plan allows ${limit} webhook endpoint${limit === 1 ? '' : 's'} and account ${account.accountId} has ${command.endpointsOfAccount} (maxWebhookEndpoints); remove one or move to a larger plan`,
        budget: 'webhook_endpoints',
        limit,
        count: command.endpointsOfAccount,
      });
    const { url, events, secretId } = command;
    return [{ type: 'WebhookEndpointAdded', endpointId, accountId: account.accountId, url, events, secretId, at }];
  }
  if (state === undefined || state.accountId !== command.accountId) return unknownEndpoint(endpointId);
  switch (command.type) {
    case 'RemoveEndpoint':
      return state.status === 'removed' ? [] : [{ type: 'WebhookEndpointRemoved', endpointId, at }];
    case 'RotateSecret':
      if (state.status === 'removed') return unknownEndpoint(endpointId);
      if (command.secretId === state.secretId || command.secretId === state.previousSecret?.secretId)
        return new Refused({ message: 'a rotated secret must be a new one' });
      // A second rotation within 24 hours drops the oldest secret at once: two sign at most.
      return [
        {
          type: 'WebhookSecretRotated',
          endpointId,
          secretId: command.secretId,
          previousSecretId: state.secretId,
          previousValidUntil: at + rotationOverlapMs,
          at,
        },
      ];
    case 'EnableEndpoint':
      if (state.status === 'removed') return unknownEndpoint(endpointId);
      return state.status === 'disabled' ? [{ type: 'WebhookEndpointEnabled', endpointId, at }] : [];
    default: {
      const unknown: never = command;
      return unknown;
    }
  }
};
