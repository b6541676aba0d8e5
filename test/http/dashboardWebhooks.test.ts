import { Effect } from 'effect';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import type { Principal } from '../../src/app/Auth.js';
import { defaultConfig } from '../../src/config.js';
import type { Command } from '../../src/domain/commands.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import type { DeliveryAsk } from '../../src/domain/webhook/commands.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { type ManualClock, systemClock } from '../../src/ports/Clock.js';
import { sessionBrowser } from '../support/dashboardForm.js';
import { eventually, loggedEvents, startTestApp, type TestApp } from '../support/testApp.js';
import { startWebhookReceiver } from '../support/webhookReceiver.js';

/**
 * The dashboard's Webhooks pages (issue 30) through HTTP: endpoints added with their secret shown once, the plan's
 * bound, remove and rotate behind confirm steps, a disabled endpoint's notice and Enable, each endpoint's delivery
 * log with Redeliver; another account's endpoint unknown, every form refused without its CSRF token.
 */

let app: TestApp;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await app.stop();
  await receiver?.close();
  receiver = undefined;
});

/** Local receivers on 127.0.0.1 over plain HTTP: allowed here, as the tests need. */
const webhooks = { ...defaultConfig().webhooks, allowHttp: true, allowPrivateNetworks: true };
const day = 86_400_000;
const models = [{ id: 'slow', provider: 'echo' as const, delayMs: 60_000, timeoutMs: 120_000 }];

const start = async () => {
  app = await startTestApp({ clock: systemClock, config: { webhooks, models } });
  receiver = await startWebhookReceiver();
  return { url: receiver.url(''), received: receiver.received };
};

/** A visitor signed up (free plan: one endpoint), with a key of its own for the API. */
const signedUp = async (email: string) => {
  const visitor = sessionBrowser(app);
  await visitor.signup(email);
  const accountId = (await app.store.reads.accountIdByEmail(email)) as string;
  const key = await Effect.runPromise(app.accounts.createKey(accountId));
  return { visitor, accountId, key: key.key, keyId: key.id };
};

type Visitor = ReturnType<typeof sessionBrowser>;

/** Adds an endpoint through the page's form, as a browser posts it: one `events` field per checked box (a field
 * repeated, which `sessionBrowser`'s record of fields cannot say), with the visitor's cookies. */
const addEndpoint = async (visitor: Visitor, url: string, events: readonly string[] = []) => {
  const page = await visitor.get('/dashboard/webhooks');
  const body = new URLSearchParams({ csrf: visitor.csrfOf(page.text), url });
  for (const type of events) body.append('events', type);
  const response = await app.http.request('http://airs.test/dashboard/webhooks', {
    method: 'POST',
    headers: {
      cookie: [...visitor.jar].map(([name, value]) => `${name}=${value}`).join('; '),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: body.toString(),
    redirect: 'manual',
  });
  return { status: response.status, text: await response.text() };
};

const secretOn = (html: string) => /<input id="new-secret" type="text" readonly value="(whsec_[^"]+)"/.exec(html)?.[1];
const endpointIdOn = (html: string) => /\/dashboard\/webhooks\/(whep_[\w-]+)\/remove/.exec(html)?.[1] as string;
const addButton = (html: string) => /<button type="submit"[^>]*>Add endpoint<\/button>/.exec(html)?.[0] ?? '';

describe('The dashboard Webhooks pages', () => {
  it('shows a new endpoint’s signing secret once, on the answer to the add, and lists the endpoint without it', async () => {
    const { url } = await start();
    const { visitor } = await signedUp('add@example.com');
    const empty = await visitor.get('/dashboard/webhooks');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('<a href="/dashboard/webhooks" aria-current="page">Webhooks</a>');
    expect(empty.text).toContain('You have no webhook endpoints yet.');
    expect(empty.text).toContain('(0 of 1 endpoints)');
    // One box per event type, none checked: every event.
    expect(empty.text).toContain('<input type="checkbox" name="events" value="request.cancelled"/>');
    expect(empty.text.match(/type="checkbox" name="events"/g)).toHaveLength(11);

    const added = await addEndpoint(visitor, `${url}/ok`, ['request.cancelled', 'request.completed']);
    expect(added.status).toBe(201);
    const secret = secretOn(added.text) as string;
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]{40,}$/);
    expect(added.text).toContain('Copy it now: it will not be shown again.');
    expect(added.text).toContain('<code>client.webhooks.unwrap(body, headers, secret)</code>');
    // Listed with its events in the list's order, enabled, never delivered.
    const row = /<tr id="endpoint-whep_[\s\S]*?<\/tr>/.exec(added.text)?.[0] ?? '';
    expect(row).toContain(`>${url}/ok</a>`);
    expect(row).toContain('<code>request.completed</code><code>request.cancelled</code>');
    expect(row).toContain('<span class="badge endpoint-enabled">enabled</span>');
    expect(row).toContain('<td data-label="Last delivered"><span class="muted">never</span></td>');

    const list = await visitor.get('/dashboard/webhooks');
    expect(list.text).toContain(`>${url}/ok</a>`);
    expect(list.text).toContain('(1 of 1 endpoints)');
    expect(list.text).not.toContain(secret);
    expect(list.text).not.toContain('whsec_');
    // No events checked: all of them.
    const endpointId = endpointIdOn(list.text);
    await visitor.post(`/dashboard/webhooks/${endpointId}/remove`, { csrf: visitor.csrfOf(list.text) });
    const all = await addEndpoint(visitor, `${url}/ok`);
    expect(all.status).toBe(201);
    expect(all.text).toContain('<td data-label="Events"><span>all events</span></td>');
  });

  it('refuses a URL the service refuses, with its reason, keeping what was typed and checked', async () => {
    await start();
    const { visitor } = await signedUp('refused@example.com');
    const refused = await addEndpoint(visitor, 'ftp://hooks.example.com/x', ['batch.failed']);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('A webhook URL must start with https:// or http://.');
    expect(refused.text).toContain('value="ftp://hooks.example.com/x"');
    expect(refused.text).toContain('<input type="checkbox" name="events" value="batch.failed" checked/>');
    expect(refused.text).not.toContain('whsec_');
    const unknown = await addEndpoint(visitor, 'https://hooks.example.com/x', ['request.teleported']);
    expect(unknown.status).toBe(400);
    expect(unknown.text).toContain('Unknown webhook event type &quot;request.teleported&quot;; known types: ');
    expect((await visitor.get('/dashboard/webhooks')).text).toContain('You have no webhook endpoints yet.');
  });

  it('disables Add endpoint at the plan’s bound with the reason beside it, and still refuses a post', async () => {
    const { url } = await start();
    const { visitor, accountId } = await signedUp('bound@example.com');
    expect(addButton((await visitor.get('/dashboard/webhooks')).text)).toBe(
      '<button type="submit">Add endpoint</button>',
    );
    expect((await addEndpoint(visitor, `${url}/ok`)).status).toBe(201);

    const full = await visitor.get('/dashboard/webhooks');
    expect(full.text).toContain('(1 of 1 endpoints)');
    expect(addButton(full.text)).toBe(
      '<button type="submit" disabled aria-describedby="webhook-limit">Add endpoint</button>',
    );
    expect(full.text).toMatch(/<input id="webhook-url"[^>]* disabled/);
    expect(full.text).toContain('<fieldset class="field event-types" disabled');
    expect(full.text).toContain(
      '<p class="limit-reason" id="webhook-limit">Your plan allows 1 endpoint; remove one to add another, or ask your operator for a larger plan.</p>',
    );

    // A stale tab (or a hand-made post) is still refused, in the page's words.
    const refused = await addEndpoint(visitor, `${url}/ok`);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('Your free plan allows 1 webhook endpoint and you have 1.');
    expect(await app.store.reads.webhookEndpointsOf(accountId)).toHaveLength(1);
  });

  it('puts remove behind a confirm step that needs no script, and says which endpoint was removed after', async () => {
    const { url } = await start();
    const { visitor, accountId } = await signedUp('remove@example.com');
    await addEndpoint(visitor, `${url}/ok`);
    const page = await visitor.get('/dashboard/webhooks');
    const endpointId = endpointIdOn(page.text);
    // The form is inside a closed <details>: a first click opens it and says what is removed, a second posts.
    expect(page.text).toMatch(
      new RegExp(
        `<details class="confirm"><summary>Remove…</summary><p>Remove ${url}/ok\\? [^<]*This cannot be undone\\.</p><form method="post" action="/dashboard/webhooks/${endpointId}/remove">`,
      ),
    );
    expect(page.text).not.toContain('was removed');

    const removed = await visitor.post(`/dashboard/webhooks/${endpointId}/remove`, { csrf: visitor.csrfOf(page.text) });
    expect(removed.status).toBe(303);
    expect(removed.headers.get('location')).toBe(`/dashboard/webhooks?removed=${endpointId}`);
    const after = await visitor.get(removed.headers.get('location') as string);
    expect(after.text).toContain(`<code>${url}/ok</code> was removed. It receives nothing from now on.`);
    expect(after.text).toContain('You have no webhook endpoints yet.');
    expect(await app.store.reads.webhookEndpointsOf(accountId)).toEqual([]);
    expect((await app.store.reads.webhookEndpoint(endpointId))?.status).toBe('removed');
    // Its page is gone with it.
    expect((await visitor.get(`/dashboard/webhooks/${endpointId}`)).status).toBe(404);
  });

  it('rotates the secret behind a confirm step and shows the new one once', async () => {
    const { url } = await start();
    const { visitor } = await signedUp('rotate@example.com');
    const first = secretOn((await addEndpoint(visitor, `${url}/ok`)).text) as string;
    const page = await visitor.get('/dashboard/webhooks');
    const endpointId = endpointIdOn(page.text);
    expect(page.text).toMatch(
      new RegExp(
        `<details class="confirm"><summary>Rotate secret…</summary><p>Make a new signing secret for ${url}/ok\\? [^<]*</p><form method="post" action="/dashboard/webhooks/${endpointId}/rotate">`,
      ),
    );

    const rotated = await visitor.post(`/dashboard/webhooks/${endpointId}/rotate`, { csrf: visitor.csrfOf(page.text) });
    expect(rotated.status).toBe(200);
    const second = secretOn(rotated.text) as string;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    expect(rotated.text).toContain('The new signing secret');
    expect(rotated.text).toContain('The secret it replaces still signs deliveries for 24 hours');
    const again = await visitor.get('/dashboard/webhooks');
    expect(again.text).not.toContain('whsec_');
    expect((await app.store.reads.webhookEndpoint(endpointId))?.previousSecret).toBeDefined();
  });

  it('lists the delivery a request cancelled through the app makes, with what it is about linked to its page', async () => {
    const { url } = await start();
    const { visitor, accountId, key, keyId } = await signedUp('listed@example.com');
    await addEndpoint(visitor, `${url}/ok`);
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    const empty = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('No deliveries yet.');
    const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: 'never mind' } });
    const reqId = ((await submitted.json()) as { request_id: string }).request_id;
    await app.requests.cancel({ accountId, keyId, plan: 'free' } as Principal, reqId);
    // Due in the same commit as the ending: listed at once, whatever the sender has done with it since.
    const log = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    const row = /<tr id="wh_[\s\S]*?<\/tr>/.exec(log.text)?.[0] ?? '';
    const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
    expect(row).toContain(`<tr id="${deliveryId}">`);
    expect(row).toContain(`<code class="id">${deliveryId}</code>`);
    expect(row).toContain('<code>request.cancelled</code>');
    expect(row).toContain(`<a class="id" href="/dashboard/requests/${reqId}">${reqId}</a>`);
    expect(row).toMatch(/<span class="badge delivery-(waiting|sending|delivered)">/);
  });

  it('shows a delivered delivery’s outcome, and Redeliver makes it waiting again under the same id', async () => {
    // A manual clock, and the delivery made and delivered in one commit: no sender sees it in between.
    app = await startTestApp({ config: { webhooks, models } });
    receiver = await startWebhookReceiver();
    const { visitor, key } = await signedUp('redeliver@example.com');
    await addEndpoint(visitor, receiver.url('/ok'), ['request.cancelled']);
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: 'delivered' } });
    const reqId = ((await submitted.json()) as { request_id: string }).request_id;
    const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
    const t = app.clock.now();
    await app.store.commit({
      commands: [
        { type: 'Cancel', reqId, now: t },
        {
          type: 'WebhookDelivery',
          deliveryId,
          command: { type: 'RecordSuccess', outcome: { attempt: 1, status: 200, latencyMs: 1_234 }, now: t },
        },
      ],
    });
    expect((await app.store.reads.webhookDelivery(deliveryId))?.status).toBe('delivered');

    const log = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    const row = /<tr id="wh_[\s\S]*?<\/tr>/.exec(log.text)?.[0] ?? '';
    expect(row).toContain(
      '<span class="badge delivery-delivered">delivered</span><span class="attempts">1 attempt</span>',
    );
    expect(row).toContain('<span class="outcome">HTTP 200 · 1,234 ms</span>');
    expect(row).not.toContain('error-text');
    const redeliver = `/dashboard/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`;
    expect(row).toContain(`<form method="post" action="${redeliver}">`);
    // The list says when the endpoint last had a delivery.
    expect((await visitor.get('/dashboard/webhooks')).text).toMatch(/<td data-label="Last delivered"><time /);

    const redelivered = await visitor.post(redeliver, { csrf: visitor.csrfOf(log.text) });
    expect(redelivered.status).toBe(303);
    const location = redelivered.headers.get('location') as string;
    expect(location).toBe(`/dashboard/webhooks/${endpointId}?redelivered=${deliveryId}`);
    expect((await visitor.get(location)).text).toContain(
      `Delivery <code>${deliveryId}</code> is waiting to be sent again, with the same <code>webhook-id</code>.`,
    );
    const events = (await loggedEvents(app)).filter((e) => 'deliveryId' in e && e.deliveryId === deliveryId);
    expect(events.map((e) => e.type)).toEqual(['WebhookDeliveryDue', 'WebhookDelivered', 'WebhookRedeliveryRequested']);
    expect((await app.store.reads.webhookDelivery(deliveryId))?.context).toMatchObject({ redeliveries: 1, dueAt: t });
  });

  it('delivers to a live receiver with the secret the add showed, and Redeliver sends it again under the same id', async () => {
    const { url, received } = await start();
    const { visitor, accountId, key, keyId } = await signedUp('live@example.com');
    const secret = secretOn((await addEndpoint(visitor, `${url}/ok`)).text) as string;
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    // A request cancelled through the app: its ending makes a delivery due, which the app's sender delivers.
    const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: 'never mind' } });
    const reqId = ((await submitted.json()) as { request_id: string }).request_id;
    await app.requests.cancel({ accountId, keyId, plan: 'free' } as Principal, reqId);
    const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
    await eventually(async () =>
      (await app.store.reads.webhookDelivery(deliveryId))?.status === 'delivered' ? true : undefined,
    );
    // Signed with the secret the add showed: the openai SDK verifies it.
    const first = received.find((one) => one.headers['webhook-id'] === deliveryId);
    const event = await new OpenAI({ apiKey: 'unused' }).webhooks.unwrap(
      first?.body as string,
      first?.headers as Record<string, string>,
      secret,
    );
    expect(event).toMatchObject({ type: 'request.cancelled', data: { id: reqId } });
    const log = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    expect(log.text).toMatch(/<span class="outcome">HTTP 200 · [\d,]+ ms<\/span>/);

    const redeliver = `/dashboard/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`;
    expect((await visitor.post(redeliver, { csrf: visitor.csrfOf(log.text) })).status).toBe(303);
    await eventually(() =>
      received.filter((one) => one.headers['webhook-id'] === deliveryId).length === 2 ? true : undefined,
    );
  });

  it('pages the delivery log newest first, 25 a page, with Older and back to the newest', async () => {
    const { url } = await start();
    const { visitor, accountId, key, keyId } = await signedUp('pages@example.com');
    await addEndpoint(visitor, `${url}/ok`, ['request.cancelled']);
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    const principal = { accountId, keyId, plan: 'free' } as Principal;
    for (let n = 0; n < 26; n++) {
      const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: `number ${n}` } });
      const reqId = ((await submitted.json()) as { request_id: string }).request_id;
      await app.requests.cancel(principal, reqId);
    }
    const idsOn = (html: string) => [...html.matchAll(/<tr id="(wh_[\w-]+)">/g)].map((match) => match[1] as string);
    const newest = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    const first = idsOn(newest.text);
    expect(first).toHaveLength(25);
    expect(newest.text).not.toContain('← Newest');
    const older = /<a href="(\/dashboard\/webhooks\/whep_[\w-]+\?before=wh_[\w-]+)">Older →<\/a>/.exec(
      newest.text,
    )?.[1];
    expect(older).toBe(`/dashboard/webhooks/${endpointId}?before=${first.at(-1)}`);
    const next = await visitor.get(older as string);
    const second = idsOn(next.text);
    expect(second).toHaveLength(1);
    expect(next.text).toContain('(older ones)');
    expect(next.text).toContain(`<a href="/dashboard/webhooks/${endpointId}">← Newest</a>`);
    expect(next.text).not.toContain('Older →');
    // Every delivery once, newest first: the order the store keeps them in.
    const all = await app.store.reads.webhookDeliveriesOf(endpointId, { limit: 100 });
    expect([...first, ...second]).toEqual(all.map((delivery) => delivery.context.deliveryId));
  });

  it('shows a notice for an endpoint disabled after failing for 3 days, refuses its redelivery, and Enable turns it on', async () => {
    // A manual clock: the failing run is the store's commands with times 3 days apart, ahead of the clock.
    app = await startTestApp({ config: { webhooks, models } });
    receiver = await startWebhookReceiver();
    const clock = app.clock as ManualClock;
    const { visitor, key } = await signedUp('disabled@example.com');
    await addEndpoint(visitor, `${receiver.url('/status/500')}`, ['request.cancelled']);
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    const submitted = await app.call('POST', '/v1/ai', { key, body: { model: 'slow', prompt: 'fails to arrive' } });
    const reqId = ((await submitted.json()) as { request_id: string }).request_id;
    const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
    // One commit, so no sender sees the delivery waiting: the cancel makes it due, its first attempt fails now, and
    // it gives up at its retention 72 hours later, which makes the run of failures 3 days long: disabled.
    const t = clock.now();
    const delivery = (command: DeliveryAsk): Command => ({ type: 'WebhookDelivery', deliveryId, command });
    const outcomes = await app.store.commit({
      commands: [
        { type: 'Cancel', reqId, now: t },
        delivery({
          type: 'RecordFailure',
          outcome: { attempt: 1, status: 500, latencyMs: 12, error: 'answered 500' },
          policy: defaultWebhookBackoff,
          random: 0.5,
          now: t,
        }),
        delivery({ type: 'GiveUp', now: t + 3 * day }),
      ],
    });
    const last = outcomes.at(-1);
    expect(last !== undefined && 'events' in last ? last.events.map((e) => e.type) : last).toEqual([
      'WebhookDeliveryGaveUp',
      'WebhookEndpointDisabled',
    ]);

    const list = await visitor.get('/dashboard/webhooks');
    const disabledAt = new Date(t + 3 * day).toISOString();
    const disabledOn = disabledAt.slice(0, 23).replace('T', ' ');
    expect(list.text).toContain(
      `<code>${receiver.url('/status/500')}</code> was disabled after failing for 3 days on <time datetime="${disabledAt}" data-ago>${disabledOn} UTC</time>; enable it to receive deliveries again.`,
    );
    expect(list.text).toContain('<span class="badge endpoint-disabled">disabled</span>');
    expect(list.text).toContain(`<form method="post" action="/dashboard/webhooks/${endpointId}/enable">`);
    // Its delivery log says why the delivery gave up (its retention, which made the run 3 days long), with the failed
    // attempt's outcome.
    const log = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    expect(log.text).toContain('was disabled after failing for 3 days');
    const row = /<tr id="wh_[\s\S]*?<\/tr>/.exec(log.text)?.[0] ?? '';
    expect(row).toContain(
      '<span class="badge delivery-gave_up">gave up</span><span class="reason">its retries ran out</span><span class="attempts">1 attempt</span>',
    );
    expect(row).toContain('<span class="outcome">HTTP 500 · 12 ms</span>');
    expect(row).toContain('<span class="error-text">answered 500</span>');
    const redeliver = `/dashboard/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`;
    const refused = await visitor.post(redeliver, { csrf: visitor.csrfOf(log.text) });
    expect(refused.status).toBe(400);
    expect(refused.text).toContain('its endpoint is disabled; enable it first.');

    const enabled = await visitor.post(`/dashboard/webhooks/${endpointId}/enable`, { csrf: visitor.csrfOf(log.text) });
    expect(enabled.status).toBe(303);
    expect(enabled.headers.get('location')).toBe(`/dashboard/webhooks?enabled=${endpointId}`);
    const after = await visitor.get(enabled.headers.get('location') as string);
    expect(after.text).toContain(
      `<code>${receiver.url('/status/500')}</code> was enabled. New deliveries are sent to it again.`,
    );
    expect(after.text).not.toContain('was disabled after failing');
    expect(after.text).toContain('<span class="badge endpoint-enabled">enabled</span>');
    expect((await app.store.reads.webhookEndpoint(endpointId))?.status).toBe('enabled');
    // Now its missed delivery can be asked for again.
    expect((await visitor.post(redeliver, { csrf: visitor.csrfOf(after.text) })).status).toBe(303);
    expect((await app.store.reads.webhookDelivery(deliveryId))?.context.redeliveries).toBe(1);
  });

  it('answers another account’s endpoint, its forms and its deliveries as not found', async () => {
    const { url } = await start();
    const owner = await signedUp('owner@example.com');
    await addEndpoint(owner.visitor, `${url}/ok`);
    const endpointId = endpointIdOn((await owner.visitor.get('/dashboard/webhooks')).text);
    const other = await signedUp('other@example.com');
    const csrf = other.visitor.csrfOf((await other.visitor.get('/dashboard/webhooks')).text);
    expect((await other.visitor.get(`/dashboard/webhooks/${endpointId}`)).status).toBe(404);
    for (const action of ['remove', 'rotate', 'enable'])
      expect((await other.visitor.post(`/dashboard/webhooks/${endpointId}/${action}`, { csrf })).status, action).toBe(
        404,
      );
    const deliveryId = `wh_${'A'.repeat(24)}${endpointId.slice(5)}`;
    expect(
      (await other.visitor.post(`/dashboard/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`, { csrf }))
        .status,
    ).toBe(404);
    // Nothing changed for its owner.
    expect((await app.store.reads.webhookEndpoint(endpointId))?.status).toBe('enabled');
    // Ids of no endpoint's form, and a page cursor that is none.
    expect((await owner.visitor.get('/dashboard/webhooks/whep_nope')).status).toBe(404);
    expect((await owner.visitor.get(`/dashboard/webhooks/${endpointId}?before=%3Cscript%3E`)).status).toBe(400);
    expect((await owner.visitor.get(`/dashboard/webhooks/${endpointId}?before=${deliveryId}`)).status).toBe(400);
  });

  it('refuses every Webhooks form without its CSRF token, and changes nothing', async () => {
    const { url } = await start();
    const { visitor, accountId } = await signedUp('csrf@example.com');
    await addEndpoint(visitor, `${url}/ok`);
    const endpointId = endpointIdOn((await visitor.get('/dashboard/webhooks')).text);
    const deliveryId = `wh_${'A'.repeat(24)}${endpointId.slice(5)}`;
    for (const path of [
      '/dashboard/webhooks',
      `/dashboard/webhooks/${endpointId}/remove`,
      `/dashboard/webhooks/${endpointId}/rotate`,
      `/dashboard/webhooks/${endpointId}/enable`,
      `/dashboard/webhooks/${endpointId}/deliveries/${deliveryId}/redeliver`,
    ]) {
      const refused = await visitor.post(path, { url: `${url}/ok` });
      expect(refused.status, path).toBe(403);
      expect(refused.text).toContain('This form has expired');
      const wrong = await visitor.post(path, { url: `${url}/ok`, csrf: 'forged' });
      expect(wrong.status, path).toBe(403);
    }
    expect(await app.store.reads.webhookEndpointsOf(accountId)).toHaveLength(1);
    const endpoint = await app.store.reads.webhookEndpoint(endpointId);
    expect(endpoint?.status).toBe('enabled');
    expect(endpoint?.previousSecret).toBeUndefined();
  });
});
