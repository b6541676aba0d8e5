import { describe, expect, it } from 'vitest';
import { AccountLimitReached, Refused } from '../../src/domain/errors.js';
import { couldBeId } from '../../src/domain/identifiers.js';
import { type BuiltInPlanName, defaultPlans, planNames } from '../../src/domain/plans.js';
import {
  countsTowardLimit,
  rotationOverlapMs,
  signingSecretIds,
  type WebhookEndpointState,
  webhookUrlProblem,
} from '../../src/domain/webhook/endpoint.js';
import { parseEventFilter, webhookEventTypes } from '../../src/domain/webhook/eventTypes.js';
import {
  account,
  accountId,
  addCommand,
  enabledEndpoint,
  endpointIds,
  hour,
  stepEndpoint,
  t0,
} from '../support/webhookDomain.js';

describe('Adding a webhook endpoint', () => {
  it('records the endpoint, enabled, with its URL, its event filter and the name of its secret (never the secret)', () => {
    const added = stepEndpoint(endpointIds[0], undefined, addCommand({ events: ['request.completed'] }));
    expect(added.events).toEqual([
      {
        type: 'WebhookEndpointAdded',
        endpointId: endpointIds[0],
        accountId,
        url: 'https://hooks.example.com/airs',
        events: ['request.completed'],
        secretId: 'sec1',
        at: t0,
      },
    ]);
    expect(added.state).toMatchObject({ status: 'enabled', secretId: 'sec1' });
    expect(couldBeId('webhookEndpoint', endpointIds[0])).toBe(true);
  });

  it.each(planNames.map((plan) => [plan, { free: 1, starter: 3, scale: 10, enterprise: 50 }[plan]] as const))(
    'allows the %s plan %i endpoints and refuses one more, naming the bound',
    (plan: BuiltInPlanName, limit: number) => {
      expect(defaultPlans[plan].maxWebhookEndpoints).toBe(limit);
      const below = stepEndpoint(
        endpointIds[0],
        undefined,
        addCommand({ account: account(plan), endpointsOfAccount: limit - 1 }),
      );
      expect(below.refused).toBeUndefined();
      const at = stepEndpoint(
        endpointIds[0],
        undefined,
        addCommand({ account: account(plan), endpointsOfAccount: limit }),
      );
      expect(at.refused).toBeInstanceOf(AccountLimitReached);
      expect(at.refused).toMatchObject({ budget: 'webhook_endpoints', limit, count: limit });
      expect((at.refused as AccountLimitReached).message).toMatch(/maxWebhookEndpoints/);
    },
  );

  it('takes the plan bound the operator configured over the default', () => {
    const plans = { ...defaultPlans, free: { ...defaultPlans.free, maxWebhookEndpoints: 2 } };
    expect(
      stepEndpoint(endpointIds[0], undefined, addCommand({ plans, endpointsOfAccount: 1 })).refused,
    ).toBeUndefined();
  });

  it('refuses an endpoint for an unknown or suspended account, or an id already used', () => {
    expect(stepEndpoint(endpointIds[0], undefined, addCommand({ account: undefined })).refused).toBeInstanceOf(Refused);
    expect(
      stepEndpoint(endpointIds[0], undefined, addCommand({ account: account('free', true) })).refused?.message,
    ).toMatch(/suspended/);
    expect(stepEndpoint(endpointIds[0], enabledEndpoint(), addCommand()).refused?.message).toMatch(/already exists/);
  });

  it.each([
    ['http://hooks.example.com/x', /https:\/\/.*webhooks\.allowHttp/],
    ['ftp://hooks.example.com/x', /https:\/\//],
    ['hooks.example.com/x', /not an absolute URL/],
    ['https://user:pw@hooks.example.com/x', /user name or password/],
    ['https://hooks.example.com/x#frag', /fragment/],
    ['https://hooks.example.com/x\u001b[31m', /control characters/],
    [`https://hooks.example.com/${'a'.repeat(2_100)}`, /at most 2048 characters/],
  ])('refuses the URL %s, saying what is wrong', (url, problem) => {
    const added = stepEndpoint(endpointIds[0], undefined, addCommand({ url }));
    expect(added.refused?.message).toMatch(problem);
  });

  it('takes an http:// URL only when the operator allows http', () => {
    expect(webhookUrlProblem('http://127.0.0.1:8080/hook', { allowHttp: true })).toBeUndefined();
    expect(webhookUrlProblem('http://127.0.0.1:8080/hook', { allowHttp: false })).toMatch(/allowHttp/);
  });
});

describe('The event filter', () => {
  it('takes known names, trimmed and without repeats, in the list order; none names every type', () => {
    expect(parseEventFilter([' request.failed', 'response.completed', 'request.failed'])).toEqual([
      'response.completed',
      'request.failed',
    ]);
    expect(parseEventFilter([])).toEqual([]);
  });
  it('refuses an unknown name, listing the known ones', () => {
    const parsed = parseEventFilter(['request.done']);
    expect(parsed).toEqual({ problem: expect.stringContaining('unknown webhook event type "request.done"') });
    expect((parsed as { problem: string }).problem).toContain(webhookEventTypes.join(', '));
  });
  it('refuses a list far longer than there are types', () => {
    expect(parseEventFilter(Array.from({ length: 1_000 }, () => 'request.failed'))).toHaveProperty('problem');
  });
});

describe("An endpoint's secret rotation", () => {
  it('signs with the new and the old secret for 24 hours, then with the new one only', () => {
    const rotated = stepEndpoint(endpointIds[0], enabledEndpoint(), {
      type: 'RotateSecret',
      accountId,
      secretId: 'sec2',
      now: t0 + hour,
    });
    expect(rotated.events).toEqual([
      {
        type: 'WebhookSecretRotated',
        endpointId: endpointIds[0],
        secretId: 'sec2',
        previousSecretId: 'sec1',
        previousValidUntil: t0 + hour + rotationOverlapMs,
        at: t0 + hour,
      },
    ]);
    const state = rotated.state as WebhookEndpointState;
    expect(signingSecretIds(state, t0 + hour)).toEqual(['sec2', 'sec1']);
    expect(signingSecretIds(state, t0 + hour + rotationOverlapMs - 1)).toEqual(['sec2', 'sec1']);
    expect(signingSecretIds(state, t0 + hour + rotationOverlapMs)).toEqual(['sec2']);
  });
  it('drops the oldest secret at once on a second rotation within 24 hours: two sign at most', () => {
    let state = enabledEndpoint();
    state = stepEndpoint(endpointIds[0], state, { type: 'RotateSecret', accountId, secretId: 'sec2', now: t0 + 1 })
      .state as WebhookEndpointState;
    state = stepEndpoint(endpointIds[0], state, { type: 'RotateSecret', accountId, secretId: 'sec3', now: t0 + 2 })
      .state as WebhookEndpointState;
    expect(signingSecretIds(state, t0 + 3)).toEqual(['sec3', 'sec2']);
  });
  it('refuses a rotation by another account, of a removed endpoint, or to a secret it already has', () => {
    const rotate = (state: WebhookEndpointState, by = accountId, secretId = 'sec2') =>
      stepEndpoint(endpointIds[0], state, { type: 'RotateSecret', accountId: by, secretId, now: t0 + 1 }).refused;
    expect(rotate(enabledEndpoint(), 'acct_ZZZZZZZZZZZZZZZZ')?.message).toMatch(/no webhook endpoint/);
    const removed = stepEndpoint(endpointIds[0], enabledEndpoint(), { type: 'RemoveEndpoint', accountId, now: t0 + 1 })
      .state as WebhookEndpointState;
    expect(rotate(removed)?.message).toMatch(/no webhook endpoint/);
    expect(rotate(enabledEndpoint(), accountId, 'sec1')?.message).toMatch(/new one/);
  });
});

describe('Removing and enabling an endpoint', () => {
  it('removes it once, frees its place under the plan bound, and a repeat changes nothing', () => {
    const removed = stepEndpoint(endpointIds[0], enabledEndpoint(), { type: 'RemoveEndpoint', accountId, now: t0 + 1 });
    expect(removed.events).toEqual([{ type: 'WebhookEndpointRemoved', endpointId: endpointIds[0], at: t0 + 1 }]);
    expect(countsTowardLimit(removed.state)).toBe(false);
    expect(
      stepEndpoint(endpointIds[0], removed.state, { type: 'RemoveEndpoint', accountId, now: t0 + 2 }).events,
    ).toEqual([]);
  });
  it("answers another account's endpoint as unknown", () => {
    const other = stepEndpoint(endpointIds[0], enabledEndpoint(), {
      type: 'RemoveEndpoint',
      accountId: 'acct_ZZZZZZZZZZZZZZZZ',
      now: t0 + 1,
    });
    expect(other.refused?.message).toBe(`no webhook endpoint ${endpointIds[0]}`);
  });
  it('enables a disabled endpoint, starting its run of failures afresh; enabling an enabled one changes nothing', () => {
    const disabled: WebhookEndpointState = {
      ...enabledEndpoint(),
      status: 'disabled',
      failingSince: t0,
      disabledAt: t0 + 3 * 24 * hour,
    };
    const enabled = stepEndpoint(endpointIds[0], disabled, { type: 'EnableEndpoint', accountId, now: t0 + 100 * hour });
    expect(enabled.events).toEqual([
      { type: 'WebhookEndpointEnabled', endpointId: endpointIds[0], at: t0 + 100 * hour },
    ]);
    expect(enabled.state).toMatchObject({ status: 'enabled' });
    expect(enabled.state).not.toHaveProperty('failingSince');
    expect(
      stepEndpoint(endpointIds[0], enabledEndpoint(), { type: 'EnableEndpoint', accountId, now: t0 + 1 }).events,
    ).toEqual([]);
  });
});
