import * as Result from 'effect/Result';
import type { H3Event } from 'h3';
import { maxBacklogCounted } from '../../../app/webhooks/recover.js';
import type { WebhooksShape } from '../../../app/webhooks/Webhooks.js';
import { effectiveLimits } from '../../../domain/account/limits.js';
import { couldBeId } from '../../../domain/identifiers.js';
import type { WebhookEndpointState } from '../../../domain/webhook/endpoint.js';
import { webhookEventTypes } from '../../../domain/webhook/eventTypes.js';
import { type DashboardKit, seeOther, send, type Visitor } from './pageKit.js';
import { plural } from './views/format.js';
import { errorPage, type WebhooksView, webhookPage, webhooksPage } from './views/pages.js';
import { mountWebhookRecover } from './webhookRecoverRoute.js';
import { deliveryRowOf, endpointRowWith } from './webhookRows.js';

/** The Webhooks pages of the dashboard: the account's endpoints, their secrets, and each one's deliveries. */

/** How many deliveries an endpoint's page lists. */
const deliveryPageSize = 25;

/** A refusal's message as a sentence on a page: `a webhook URL must …` → `A webhook URL must ….` */
const sentence = (message: string) => {
  const text = message.charAt(0).toUpperCase() + message.slice(1);
  return /[.!?]$/.test(text) ? text : `${text}.`;
};

/**
 * The Webhooks pages (issue 30): the account's endpoints, adding one (its secret shown this once, as a new key's),
 * rotating its secret, removing and enabling it, and each endpoint's delivery log with Redeliver. Every change and
 * every list goes through the Webhooks service, as the CLI's do.
 */
export const mountWebhookPages = (
  { deps, routes, run, visitor, page, action, notFound }: DashboardKit,
  webhooks: WebhooksShape,
) => {
  /** The account's endpoints (not removed), oldest first. The service refuses only an unknown account, which a
   * visitor's is not: a refusal is a fault (500), as the store's own faults are (503). */
  const endpointsOf = async (who: Visitor) => {
    const listed = await run(webhooks.list(who.account.accountId));
    if (Result.isFailure(listed)) throw listed.failure;
    return listed.success;
  };
  const renderWebhooks = async (
    who: Visitor,
    extra: Pick<WebhooksView, 'newSecret' | 'error' | 'form' | 'done'> = {},
  ) => {
    const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
    const listed = await run(webhooks.listWithBacklog(who.account.accountId));
    if (Result.isFailure(listed)) throw listed.failure;
    return webhooksPage({
      csrf: who.csrf,
      email: account.email,
      endpoints: listed.success.map(({ endpoint, backlog }) => endpointRowWith(endpoint, backlog)),
      maxEndpoints: effectiveLimits(deps.config.plans, account).maxWebhookEndpoints,
      eventTypes: webhookEventTypes,
      retentionHours: deps.config.webhooks.retentionHours,
      ...extra,
    });
  };
  /** One of the account's endpoints named by the path; another account's, a removed or an unknown one: none. */
  const ownEndpoint = async (event: H3Event, who: Visitor) => {
    const endpointId = event.context.params?.id ?? '';
    if (!couldBeId('webhookEndpoint', endpointId)) return undefined;
    return (await endpointsOf(who)).find((endpoint) => endpoint.endpointId === endpointId);
  };

  routes.get(
    '/dashboard/webhooks',
    page(async (event, who) => {
      // After a removal or an enabling (`?removed=ID`, `?enabled=ID`): the notice names the account's own endpoint.
      const query = event.url.searchParams;
      const removedId = query.get('removed') ?? '';
      const enabledId = query.get('enabled') ?? '';
      let done: WebhooksView['done'];
      if (couldBeId('webhookEndpoint', removedId)) {
        // A removed endpoint is no longer listed: its URL is read from the view (the account's own only).
        const removed = await deps.store.reads.webhookEndpoint(removedId);
        if (removed?.accountId === who.account.accountId && removed.status === 'removed')
          done = { what: 'removed', url: removed.url };
      } else if (couldBeId('webhookEndpoint', enabledId)) {
        const enabled = (await endpointsOf(who)).find((endpoint) => endpoint.endpointId === enabledId);
        if (enabled?.status === 'enabled') done = { what: 'enabled', url: enabled.url };
      }
      return renderWebhooks(who, { done });
    }),
  );

  routes.post(
    '/dashboard/webhooks',
    action(async (event, who, form) => {
      const url = (form.get('url') ?? '').trim();
      const events = form.getAll('events');
      const kept = { url: url.slice(0, 2_048), events: events.filter((name) => name.length <= 64) };
      const account = (await deps.store.reads.account(who.account.accountId)) ?? who.account;
      // Said in the page's words; the domain counts again inside the write (another tab, the CLI).
      const bound = effectiveLimits(deps.config.plans, account).maxWebhookEndpoints;
      const count = (await endpointsOf(who)).length;
      if (count >= bound) {
        const error = `Your ${account.plan} plan allows ${plural(bound, 'webhook endpoint')} and you have ${count}. Remove one to add another, or ask your operator for a larger plan.`;
        return send(event, 400, await renderWebhooks(who, { error, form: kept }));
      }
      const added = await run(webhooks.add(who.account.accountId, url, events));
      if (Result.isFailure(added))
        return send(event, 400, await renderWebhooks(who, { error: sentence(added.failure.message), form: kept }));
      const { endpoint, secret } = added.success;
      deps.log.info({ accountId: who.account.accountId, endpointId: endpoint.endpointId }, 'dashboard webhook added');
      // The only page that ever shows the secret: answered directly, never through a redirect that could be reloaded.
      return send(
        event,
        201,
        await renderWebhooks(who, {
          newSecret: { endpointId: endpoint.endpointId, url: endpoint.url, secret, rotated: false },
        }),
      );
    }),
  );

  routes.post(
    '/dashboard/webhooks/:id/rotate',
    action(async (event, who) => {
      const endpoint = await ownEndpoint(event, who);
      if (endpoint === undefined) return notFound(event, who);
      const rotated = await run(webhooks.rotateSecret(who.account.accountId, endpoint.endpointId));
      if (Result.isFailure(rotated))
        return send(event, 400, await renderWebhooks(who, { error: sentence(rotated.failure.message) }));
      deps.log.info(
        { accountId: who.account.accountId, endpointId: endpoint.endpointId },
        'dashboard webhook secret rotated',
      );
      const { secret } = rotated.success;
      return send(
        event,
        200,
        await renderWebhooks(who, {
          newSecret: { endpointId: endpoint.endpointId, url: endpoint.url, secret, rotated: true },
        }),
      );
    }),
  );

  routes.post(
    '/dashboard/webhooks/:id/remove',
    action(async (event, who) => {
      const endpoint = await ownEndpoint(event, who);
      if (endpoint === undefined) return notFound(event, who);
      const removed = await run(webhooks.remove(who.account.accountId, endpoint.endpointId));
      if (Result.isFailure(removed))
        return send(event, 400, await renderWebhooks(who, { error: sentence(removed.failure.message) }));
      deps.log.info({ accountId: who.account.accountId, endpointId: endpoint.endpointId }, 'dashboard webhook removed');
      // A redirect, so that a reload changes nothing; the page it leads to says what was removed.
      return seeOther(event, `/dashboard/webhooks?removed=${encodeURIComponent(endpoint.endpointId)}`);
    }),
  );

  routes.post(
    '/dashboard/webhooks/:id/enable',
    action(async (event, who) => {
      const endpoint = await ownEndpoint(event, who);
      if (endpoint === undefined) return notFound(event, who);
      const enabled = await run(webhooks.enable(who.account.accountId, endpoint.endpointId));
      if (Result.isFailure(enabled))
        return send(event, 400, await renderWebhooks(who, { error: sentence(enabled.failure.message) }));
      deps.log.info({ accountId: who.account.accountId, endpointId: endpoint.endpointId }, 'dashboard webhook enabled');
      return seeOther(event, `/dashboard/webhooks?enabled=${encodeURIComponent(endpoint.endpointId)}`);
    }),
  );

  /** An endpoint's page: it, and one page of its deliveries (newest, or older than `?before=wh_…`). */
  const renderEndpoint = async (
    event: H3Event,
    who: Visitor,
    endpoint: WebhookEndpointState,
    extra: { error?: string; redelivered?: string; recovered?: { count: number; more: boolean } } = {},
  ) => {
    const before = event.url.searchParams.get('before') ?? undefined;
    if (before !== undefined && !couldBeId('webhookDelivery', before)) return undefined;
    const page = { limit: deliveryPageSize + 1, before };
    const listed = await run(webhooks.deliveries(who.account.accountId, endpoint.endpointId, page));
    // A cursor of no delivery of this endpoint is no page; without one, the endpoint was removed since it was
    // listed (another tab, the CLI): answered as gone.
    if (Result.isFailure(listed)) return before === undefined ? ('gone' as const) : undefined;
    // One more than shown says whether an older page is left.
    const shown = listed.success.slice(0, deliveryPageSize);
    return webhookPage({
      csrf: who.csrf,
      email: who.account.email,
      endpoint: endpointRowWith(
        endpoint,
        await deps.store.reads.webhookBacklog(endpoint.endpointId, maxBacklogCounted),
      ),
      deliveries: shown.map(deliveryRowOf),
      olderCursor: listed.success.length > deliveryPageSize ? shown.at(-1)?.context.deliveryId : undefined,
      older: before !== undefined,
      ...extra,
    });
  };
  routes.get('/dashboard/webhooks/:id', async (event) => {
    const who = await visitor(event);
    if (who === undefined) return seeOther(event, '/dashboard/login');
    const endpoint = await ownEndpoint(event, who);
    if (endpoint === undefined) return notFound(event, who);
    // After a redelivery (`?redelivered=wh_…`): a delivery of this endpoint (its id ends with the endpoint's).
    const redelivered = event.url.searchParams.get('redelivered') ?? '';
    // After a recover (`?recovered=N[&more=1]`): how many were made due again.
    const recoveredCount = event.url.searchParams.get('recovered') ?? '';
    const markup = await renderEndpoint(event, who, endpoint, {
      recovered: /^\d{1,5}$/.test(recoveredCount)
        ? { count: Number(recoveredCount), more: event.url.searchParams.get('more') === '1' }
        : undefined,
      redelivered:
        couldBeId('webhookDelivery', redelivered) && redelivered.endsWith(endpoint.endpointId.slice('whep_'.length))
          ? redelivered
          : undefined,
    });
    if (markup === 'gone') return notFound(event, who);
    if (markup !== undefined) return send(event, 200, markup);
    return send(
      event,
      400,
      errorPage({
        status: 400,
        title: 'Not a page of deliveries',
        message:
          'This link does not name a page of this endpoint’s deliveries (it may have been cut short). Start again from the newest.',
        loggedIn: true,
        csrf: who.csrf,
        email: who.account.email,
      }),
    );
  });

  routes.post(
    '/dashboard/webhooks/:id/deliveries/:deliveryId/redeliver',
    action(async (event, who) => {
      const endpoint = await ownEndpoint(event, who);
      const deliveryId = event.context.params?.deliveryId ?? '';
      if (endpoint === undefined || !couldBeId('webhookDelivery', deliveryId)) return notFound(event, who);
      const redelivered = await run(webhooks.redeliver(who.account.accountId, deliveryId));
      if (Result.isFailure(redelivered)) {
        const markup = await renderEndpoint(event, who, endpoint, { error: sentence(redelivered.failure.message) });
        return markup === undefined || markup === 'gone' ? notFound(event, who) : send(event, 400, markup);
      }
      deps.log.info({ accountId: who.account.accountId, deliveryId }, 'dashboard webhook redelivered');
      const endpointId = redelivered.success.context.endpointId;
      return seeOther(
        event,
        `/dashboard/webhooks/${encodeURIComponent(endpointId)}?redelivered=${encodeURIComponent(deliveryId)}`,
      );
    }),
  );

  mountWebhookRecover({
    post: routes.post,
    action,
    ownEndpoint,
    accountOf: (who: Visitor) => who.account.accountId,
    notFound,
    seeOther,
    refused: async (event, who, endpoint, message) => {
      const markup = await renderEndpoint(event, who, endpoint, { error: message });
      return markup === undefined || markup === 'gone' ? notFound(event, who) : send(event, 400, markup);
    },
    webhooks,
    run,
    now: () => deps.clock.now(),
    logRecovered: (accountId, endpointId, redelivered) =>
      deps.log.info({ accountId, endpointId, redelivered }, 'dashboard webhook deliveries recovered'),
  });
};
