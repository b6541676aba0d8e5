import * as Effect from 'effect/Effect';
import * as Layer from 'effect/Layer';
import { webhookRetentionMs } from '../../config.js';
import { isRefusal } from '../../domain/commands.js';
import { AccountLimitReached, Refused, Unavailable } from '../../domain/errors.js';
import { couldBeId, idForMessage } from '../../domain/identifiers.js';
import { defaultWebhookBackoff } from '../../domain/webhook/backoff.js';
import type { WebhookCommand } from '../../domain/webhook/commands.js';
import type { DeliveryState } from '../../domain/webhook/delivery.js';
import { type WebhookEndpointState, webhookUrlProblem } from '../../domain/webhook/endpoint.js';
import { parseEventFilter } from '../../domain/webhook/eventTypes.js';
import { AppClock } from '../../ports/Clock.js';
import { Ids } from '../../ports/Ids.js';
import { Store, type WebhookBacklog } from '../../ports/Store.js';
import { WebhookDestinations } from '../../ports/WebhookDestinations.js';
import { AppConfig } from '../AppConfig.js';
import { Committer } from '../Committer.js';
import { failedSince, maxBacklogCounted, redeliveryOf } from './recover.js';
import { newWebhookSecret } from './signing.js';
import { Webhooks } from './Webhooks.js';

/** The most deliveries one page of an endpoint's log holds (`airs webhooks deliveries --limit`, the dashboard). */
export const maxDeliveriesPage = 100;

const noEndpoint = (endpointId: string) => new Refused({ message: `no webhook endpoint ${idForMessage(endpointId)}` });
const noDelivery = (deliveryId: string) => new Refused({ message: `no webhook delivery ${idForMessage(deliveryId)}` });

/**
 * The Webhooks service (Webhooks.ts), as Accounts.ts is made: each change is a command the committer sends into the
 * store's write (where the plan's bound and the endpoint's account are checked), and each answer is read back from
 * the views once the write is durable.
 */
export const WebhooksLayer = Layer.effect(
  Webhooks,
  Effect.gen(function* () {
    const store = yield* Store;
    const committer = yield* Committer;
    const clock = yield* AppClock;
    const ids = yield* Ids;
    const config = yield* AppConfig;
    const destinations = yield* WebhookDestinations;

    const run = <A>(command: WebhookCommand, result: () => Promise<A>) =>
      Effect.flatMap(
        Effect.promise(() => committer.send(command)),
        (outcome): Effect.Effect<A, Refused | AccountLimitReached> => {
          if (outcome instanceof Refused || outcome instanceof AccountLimitReached) return Effect.fail(outcome);
          // Only an API caller's command is refused for a full queue; said in words should one come here anyway.
          if (outcome instanceof Unavailable) return Effect.fail(new Refused({ message: outcome.message }));
          if (isRefusal(outcome)) return Effect.die(outcome);
          return Effect.promise(result);
        },
      );

    /** Only an add counts toward the plan's bound: any other command reaching it is a defect. */
    const refusedOnly = <A>(effect: Effect.Effect<A, Refused | AccountLimitReached>): Effect.Effect<A, Refused> =>
      Effect.catchTag(effect, 'AccountLimitReached', (limit) => Effect.die(limit));

    const withAccount = (accountId: string) =>
      Effect.flatMap(
        Effect.promise(async () => (couldBeId('account', accountId) ? store.reads.account(accountId) : undefined)),
        (account) =>
          account === undefined
            ? Effect.fail(new Refused({ message: `no account ${idForMessage(accountId)}` }))
            : Effect.succeed(account),
      );

    /** The account's endpoint, not removed: anything else (another account's included) is answered as unknown. */
    const endpointOf = (accountId: string, endpointId: string) =>
      Effect.flatMap(withAccount(accountId), () =>
        Effect.flatMap(
          Effect.promise(async () =>
            couldBeId('webhookEndpoint', endpointId) ? store.reads.webhookEndpoint(endpointId) : undefined,
          ),
          (endpoint) =>
            endpoint === undefined || endpoint.accountId !== accountId || endpoint.status === 'removed'
              ? Effect.fail(noEndpoint(endpointId))
              : Effect.succeed(endpoint),
        ),
      );

    /** The account an endpoint command acts for: the one given, or else the endpoint's own (its id names it). */
    const accountOfEndpoint = (given: string | undefined, endpointId: string): Effect.Effect<string, Refused> =>
      given !== undefined
        ? Effect.succeed(given)
        : Effect.flatMap(
            Effect.promise(async () =>
              couldBeId('webhookEndpoint', endpointId) ? store.reads.webhookEndpoint(endpointId) : undefined,
            ),
            (endpoint) =>
              endpoint === undefined ? Effect.fail(noEndpoint(endpointId)) : Effect.succeed(endpoint.accountId),
          );

    /** The same for a delivery: the account given, or the delivery's own. */
    const accountOfDelivery = (given: string | undefined, deliveryId: string): Effect.Effect<string, Refused> =>
      given !== undefined
        ? Effect.succeed(given)
        : Effect.flatMap(
            Effect.promise(async () =>
              couldBeId('webhookDelivery', deliveryId) ? store.reads.webhookDelivery(deliveryId) : undefined,
            ),
            (delivery) =>
              delivery === undefined || delivery.status === 'none'
                ? Effect.fail(noDelivery(deliveryId))
                : Effect.succeed(delivery.context.accountId),
          );

    const endpointNow = (endpointId: string) => async () =>
      (await store.reads.webhookEndpoint(endpointId)) as WebhookEndpointState;

    /** An endpoint command for an account's endpoint: the account must exist and the id be of the endpoint form;
     * whose endpoint it is, is decided inside the write. */
    const endpointCommand = (
      accountId: string,
      endpointId: string,
      command: Extract<WebhookCommand, { type: 'WebhookEndpoint' }>['command'],
    ) =>
      Effect.flatMap(withAccount(accountId), () =>
        couldBeId('webhookEndpoint', endpointId)
          ? refusedOnly(run({ type: 'WebhookEndpoint', endpointId, command }, endpointNow(endpointId)))
          : Effect.fail(noEndpoint(endpointId)),
      );

    const policy = { allowHttp: config.webhooks.allowHttp, allowPrivateNetworks: config.webhooks.allowPrivateNetworks };

    /** What is wrong with `url`: first its form (the domain's rules), then where its host points, resolved now. */
    const urlProblem = async (url: string) =>
      webhookUrlProblem(url, { allowHttp: policy.allowHttp }) ?? (await destinations.problem(url, policy));

    return Webhooks.of({
      add: (accountId, rawUrl, events) =>
        Effect.flatMap(withAccount(accountId), () => {
          const filter = parseEventFilter(events);
          if ('problem' in filter) return Effect.fail(new Refused({ message: filter.problem }));
          // Pasted URLs often come with a space or line break at an end; inside one they are refused.
          const url = rawUrl.trim();
          return Effect.flatMap(
            Effect.promise(() => urlProblem(url)),
            (problem) => {
              if (problem !== undefined) return Effect.fail(new Refused({ message: problem }));
              const endpointId = ids.webhookEndpointId();
              const secret = newWebhookSecret();
              return run(
                {
                  type: 'WebhookEndpoint',
                  endpointId,
                  command: {
                    type: 'AddEndpoint',
                    accountId,
                    url,
                    events: filter,
                    secretId: ids.webhookSecretId(),
                    secret,
                    plans: config.plans,
                    allowHttp: policy.allowHttp,
                    now: clock.now(),
                  },
                },
                async () => ({ endpoint: await endpointNow(endpointId)(), secret }),
              );
            },
          );
        }),
      list: (accountId) =>
        Effect.flatMap(withAccount(accountId), () => Effect.promise(() => store.reads.webhookEndpointsOf(accountId))),
      listWithBacklog: (accountId) =>
        Effect.flatMap(withAccount(accountId), () =>
          Effect.promise(async () => {
            const endpoints = await store.reads.webhookEndpointsOf(accountId);
            // An account has at most its plan's bound of endpoints (50): one bounded read each.
            const backlogs = await Promise.all(
              endpoints.map((e) => store.reads.webhookBacklog(e.endpointId, maxBacklogCounted)),
            );
            return endpoints.map((endpoint, i) => ({ endpoint, backlog: backlogs[i] as WebhookBacklog }));
          }),
        ),
      remove: (given, endpointId) =>
        Effect.flatMap(accountOfEndpoint(given, endpointId), (accountId) =>
          endpointCommand(accountId, endpointId, { type: 'RemoveEndpoint', accountId, now: clock.now() }),
        ),
      rotateSecret: (given, endpointId) =>
        Effect.flatMap(accountOfEndpoint(given, endpointId), (accountId) => {
          const secret = newWebhookSecret();
          return Effect.map(
            endpointCommand(accountId, endpointId, {
              type: 'RotateSecret',
              accountId,
              secretId: ids.webhookSecretId(),
              secret,
              now: clock.now(),
            }),
            (endpoint) => ({ endpoint, secret }),
          );
        }),
      enable: (given, endpointId) =>
        Effect.flatMap(accountOfEndpoint(given, endpointId), (accountId) =>
          endpointCommand(accountId, endpointId, { type: 'EnableEndpoint', accountId, now: clock.now() }),
        ),
      recover: (given, endpointId, since) =>
        Effect.flatMap(accountOfEndpoint(given, endpointId), (accountId) =>
          Effect.flatMap(endpointOf(accountId, endpointId), (endpoint) => {
            if (endpoint.status === 'disabled')
              return Effect.fail(
                new Refused({ message: `webhook endpoint ${endpointId} is disabled: enable it first, then recover` }),
              );
            if (!Number.isSafeInteger(since) || since < 0)
              return Effect.fail(new Refused({ message: 'recover: since must be a time' }));
            return Effect.flatMap(
              Effect.promise(() => failedSince(store, endpointId, since)),
              ({ failed, scanned, more }) => {
                const now = clock.now();
                const sends = failed.map((delivery) =>
                  committer.send(
                    redeliveryOf(delivery, accountId, webhookRetentionMs(config.webhooks), defaultWebhookBackoff, now),
                  ),
                );
                return Effect.promise(async () => {
                  const outcomes = await Promise.all(sends);
                  // One that changed meanwhile (redelivered already, its endpoint disabled) is refused: not counted.
                  const redelivered = outcomes.filter((o) => !(o instanceof Error)).length;
                  return { redelivered, scanned, more };
                });
              },
            );
          }),
        ),
      deliveries: (given, endpointId, page) =>
        Effect.flatMap(
          Effect.flatMap(accountOfEndpoint(given, endpointId), (accountId) => endpointOf(accountId, endpointId)),
          () => {
            const { limit, before } = page;
            if (!Number.isSafeInteger(limit) || limit < 1 || limit > maxDeliveriesPage)
              return Effect.fail(
                new Refused({ message: `a page of deliveries holds 1 to ${maxDeliveriesPage}; asked for ${limit}` }),
              );
            return Effect.flatMap(
              Effect.promise(async () =>
                before === undefined || !couldBeId('webhookDelivery', before)
                  ? undefined
                  : store.reads.webhookDelivery(before),
              ),
              (from): Effect.Effect<readonly DeliveryState[], Refused> => {
                if (before === undefined)
                  return Effect.promise(() => store.reads.webhookDeliveriesOf(endpointId, { limit }));
                // The page starts after a delivery of this endpoint's log, or nowhere.
                if (from === undefined || from.context.endpointId !== endpointId)
                  return Effect.fail(noDelivery(before));
                const after = { createdAt: from.context.createdAt, deliveryId: from.context.deliveryId };
                return Effect.promise(() => store.reads.webhookDeliveriesOf(endpointId, { limit, before: after }));
              },
            );
          },
        ),
      redeliver: (given, deliveryId) =>
        Effect.flatMap(accountOfDelivery(given, deliveryId), (accountId) =>
          Effect.flatMap(withAccount(accountId), () => {
            if (!couldBeId('webhookDelivery', deliveryId)) return Effect.fail(noDelivery(deliveryId));
            return refusedOnly(
              run(
                {
                  type: 'WebhookDelivery',
                  deliveryId,
                  command: {
                    type: 'Redeliver',
                    accountId,
                    // A redelivery is attempted as long as a first delivery is (`webhooks.retentionHours`).
                    policy: { ...defaultWebhookBackoff, maxTotalMs: webhookRetentionMs(config.webhooks) },
                    now: clock.now(),
                  },
                },
                async () => (await store.reads.webhookDelivery(deliveryId)) as DeliveryState,
              ),
            );
          }),
        ),
    });
  }),
);
