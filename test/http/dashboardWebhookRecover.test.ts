import { Effect } from 'effect';
import { afterEach, describe, expect, it } from 'vitest';
import { defaultConfig } from '../../src/config.js';
import type { Command } from '../../src/domain/commands.js';
import { defaultWebhookBackoff } from '../../src/domain/webhook/backoff.js';
import { webhookDeliveryId, webhookEventId } from '../../src/domain/webhook/eventTypes.js';
import { systemClock } from '../../src/ports/Clock.js';
import { sessionBrowser } from '../support/dashboardForm.js';
import { submit } from '../support/submit.js';
import { eventually, startTestApp, type TestApp } from '../support/testApp.js';
import { startWebhookReceiver } from '../support/webhookReceiver.js';

/**
 * Issue 42 on the dashboard's Webhooks pages, through HTTP: an endpoint's health (failing since, backlog, next
 * attempt) in the list and on its page, each attempt in its delivery log, and Recover, which sends the deliveries that
 * gave up again (and only those), behind the form's CSRF token.
 */

let app: TestApp;
let receiver: Awaited<ReturnType<typeof startWebhookReceiver>> | undefined;
afterEach(async () => {
  await app.stop();
  await receiver?.close();
  receiver = undefined;
});

const webhooks = { ...defaultConfig().webhooks, allowHttp: true, allowPrivateNetworks: true };
const models = [{ id: 'slow', provider: 'echo' as const, delayMs: 60_000, timeoutMs: 120_000 }];

describe('Recover on the dashboard', () => {
  it('shows a failing endpoint’s health and each attempt, and Recover sends its given-up deliveries again, no others', async () => {
    app = await startTestApp({ clock: systemClock, config: { webhooks, models } });
    receiver = await startWebhookReceiver();
    const visitor = sessionBrowser(app);
    await visitor.signup('recover@example.com');
    const accountId = (await app.store.reads.accountIdByEmail('recover@example.com')) as string;
    const key = (await Effect.runPromise(app.accounts.createKey(accountId))).key;
    const { endpoint } = await Effect.runPromise(
      app.webhooks.add(accountId, receiver.url('/ok'), ['request.cancelled']),
    );
    const endpointId = endpoint.endpointId;
    const submitted = () => submit(app, key, { model: 'slow', prompt: 'hooked' });
    // One delivery is delivered; then two fail their last attempt at the end of their retention and give up. Each
    // made and settled in one commit: the app's sender never sees them in between.
    const t = app.clock.now();
    const deliveredReq = await submitted();
    const deliveredId = webhookDeliveryId(webhookEventId(deliveredReq, 'request.cancelled'), endpointId);
    await app.store.commit({
      commands: [
        { type: 'Cancel', reqId: deliveredReq, now: t },
        {
          type: 'WebhookDelivery',
          deliveryId: deliveredId,
          command: { type: 'RecordSuccess', outcome: { attempt: 1, status: 200, latencyMs: 7 }, now: t },
        },
      ],
    });
    const failedIds: string[] = [];
    for (let i = 0; i < 2; i++) {
      const reqId = await submitted();
      const deliveryId = webhookDeliveryId(webhookEventId(reqId, 'request.cancelled'), endpointId);
      failedIds.push(deliveryId);
      await app.store.commit({
        commands: [
          { type: 'Cancel', reqId, now: t },
          {
            type: 'WebhookDelivery',
            deliveryId,
            command: {
              type: 'RecordFailure',
              outcome: { attempt: 1, status: 500, latencyMs: 12, error: 'answered 500' },
              policy: defaultWebhookBackoff,
              random: 0.99,
              now: t + defaultWebhookBackoff.maxTotalMs - 1_000,
            },
          },
        ] satisfies Command[],
      });
    }
    for (const id of failedIds) expect((await app.store.reads.webhookDelivery(id))?.status).toBe('gave_up');

    const list = await visitor.get('/dashboard/webhooks');
    const row = /<tr id="endpoint-whep_[\s\S]*?<\/tr>/.exec(list.text)?.[0] ?? '';
    expect(row).toMatch(
      /<td data-label="Health"><span class="lines"><span class="badge endpoint-failing">failing since <time /,
    );
    expect(row).toContain('<span class="backlog">0 waiting</span>');
    const page = await visitor.get(`/dashboard/webhooks/${endpointId}`);
    expect(page.text).toContain('Recover failed deliveries</button>');
    const failedRow = new RegExp(`<tr id="${failedIds[0]}">[\\s\\S]*?</tr>`).exec(page.text)?.[0] ?? '';
    expect(failedRow).toContain(
      '<span class="outcome">HTTP 500 · 12 ms</span><span class="error-text">answered 500</span>',
    );
    expect(failedRow).toContain('<li value="1">');

    // Without the form's token: refused, nothing sent again.
    expect((await visitor.post(`/dashboard/webhooks/${endpointId}/recover`, { hours: '1' })).status).toBe(403);
    // A window the form does not offer: said so.
    const csrf = visitor.csrfOf(page.text);
    const odd = await visitor.post(`/dashboard/webhooks/${endpointId}/recover`, { csrf, hours: '5' });
    expect(odd.status).toBe(400);
    expect(odd.text).toContain('Choose how far back to recover.');
    for (const id of failedIds) expect((await app.store.reads.webhookDelivery(id))?.status).toBe('gave_up');

    const recovered = await visitor.post(`/dashboard/webhooks/${endpointId}/recover`, { csrf, hours: '1' });
    expect(recovered.status).toBe(303);
    const location = recovered.headers.get('location') as string;
    expect(location).toBe(`/dashboard/webhooks/${endpointId}?recovered=2`);
    expect((await visitor.get(location)).text).toContain('2 failed deliveries will be sent again');
    await eventually(async () => {
      const states = await Promise.all(failedIds.map((id) => app.store.reads.webhookDelivery(id)));
      return states.every((s) => s?.status === 'delivered') ? true : undefined;
    }, 15_000);
    const sent = receiver.received.map((one) => one.headers['webhook-id']);
    expect(sent.sort()).toEqual([...failedIds].sort());
    expect((await app.store.reads.webhookDelivery(deliveredId))?.context.redeliveries).toBe(0);
  });
});
