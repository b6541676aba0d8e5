import { describe, expect, it } from 'vitest';
import {
  createSendPlaces,
  rememberedEndpoints,
  slowAnswerMs,
  standingTrustedMs,
} from '../../src/app/webhooks/sendPlaces.js';
import type { WebhookEndpointState } from '../../src/domain/webhook/endpoint.js';

// Issue 40: the rule of a webhook sender's places, alone (the sender that applies it: test/app/webhookSendPlaces.test.ts).

const endpoint = (n: number, more: Partial<WebhookEndpointState> = {}): WebhookEndpointState => ({
  endpointId: `whep_${n}`,
  accountId: `acct_${more.accountId ?? n}`,
  url: `https://hooks.example.com/${n}`,
  events: [],
  status: 'enabled',
  createdAt: 0,
  secretId: `whsk_${n}`,
  ...more,
});
const answering = (n: number, accountId?: string) =>
  endpoint(n, { lastDeliveredAt: 1, ...(accountId === undefined ? {} : { accountId }) });

const placesAt = (clock: { now: number }) =>
  createSendPlaces({ maxInFlight: 8, perEndpoint: 3, perAccount: 5 }, () => clock.now);

let deliveries = 0;
const due = (view: WebhookEndpointState) => ({ deliveryId: `wh_${++deliveries}`, endpointId: view.endpointId });

describe("A webhook sender's places", () => {
  it('gives an endpoint that answers perEndpoint places, one that has not answered one, and those at most half of all', () => {
    const places = placesAt({ now: 0 });
    const view = answering(1);
    expect([1, 2, 3, 4].map(() => places.take(places.claimFor(due(view), view)))).toEqual([true, true, true, false]);
    const fresh = endpoint(2);
    expect([1, 2].map(() => places.take(places.claimFor(due(fresh), fresh)))).toEqual([true, false]);
    const failing = endpoint(3, { lastDeliveredAt: 1, failingSince: 2 });
    expect(places.take(places.claimFor(due(failing), failing))).toBe(true);
    // Two more that have not answered fill the half (4 of 8); a fifth has no room.
    for (const n of [4, 5]) expect(places.take(places.claimFor(due(endpoint(n)), endpoint(n)))).toBe(true);
    expect(places.take(places.claimFor(due(endpoint(6)), endpoint(6)))).toBe(false);
    expect(places.passOver('whep_6')).toBe(true);
    // The other half is there for endpoints that answer.
    expect(places.passOver('whep_7')).toBe(false);
    expect(places.take(places.claimFor(due(answering(7)), answering(7)))).toBe(true);
    expect(places.size()).toBe(8);
  });

  it("holds one account's endpoints to perAccount places together", () => {
    const places = placesAt({ now: 0 });
    const [a, b] = [answering(1, 'same'), answering(2, 'same')];
    const taken = [a, a, a, b, b, b].map((view) => places.take(places.claimFor(due(view), view)));
    expect(taken).toEqual([true, true, true, true, true, false]);
    expect(places.passOver('whep_2')).toBe(true);
  });

  it('lets a delivery whose endpoint is removed or disabled be given up past every bound but the total', () => {
    const places = placesAt({ now: 0 });
    const removed = endpoint(1, { status: 'removed' });
    for (let i = 0; i < 8; i++) expect(places.take(places.claimFor(due(removed), removed))).toBe(true);
    expect(places.take(places.claimFor(due(removed), removed))).toBe(false);
    const unknown = { deliveryId: 'wh_gone', endpointId: 'whep_gone' };
    expect(places.claimFor(unknown, undefined)).toMatchObject({ kind: 'givingUp' });
  });

  it(`puts an endpoint whose post was slower than ${slowAnswerMs} ms, or failed, on one place until a prompt delivery`, () => {
    const places = placesAt({ now: 0 });
    const view = answering(1);
    const first = places.claimFor(due(view), view);
    expect(first.kind).toBe('answering');
    places.take(first);
    places.heard(view.endpointId, { delivered: true, latencyMs: slowAnswerMs });
    places.release(first.deliveryId);
    expect(places.claimFor(due(view), view).kind).toBe('unanswered');
    // A failed post: the store's view says failing from its record on.
    places.heard(view.endpointId, { delivered: false, latencyMs: 10 });
    const failing = { ...view, failingSince: 2 };
    expect(places.claimFor(due(failing), failing).kind).toBe('unanswered');
    expect(places.passOver(view.endpointId)).toBe(false);
    places.heard(view.endpointId, { delivered: true, latencyMs: slowAnswerMs - 1 });
    expect(places.claimFor(due(view), view).kind).toBe('answering');
  });

  it(`trusts what it learned of an endpoint for ${standingTrustedMs} ms to pass it over unread, and forgets the least recently seen past ${rememberedEndpoints}`, () => {
    const clock = { now: 0 };
    const places = placesAt(clock);
    for (const n of [1, 2, 3, 4]) places.take(places.claimFor(due(endpoint(n)), endpoint(n)));
    // The half is full: endpoint 5, known not to answer, is passed over; once what is known is old, it is read.
    places.claimFor(due(endpoint(5)), endpoint(5));
    expect(places.passOver('whep_5')).toBe(true);
    clock.now = standingTrustedMs + 1;
    expect(places.passOver('whep_5')).toBe(false);
    // Remembered endpoints are bounded: the oldest learned is forgotten first, and read again.
    places.claimFor(due(endpoint(5)), endpoint(5));
    for (let n = 100; n < 100 + rememberedEndpoints; n++) places.claimFor(due(endpoint(n)), endpoint(n));
    expect(places.passOver('whep_5')).toBe(false);
    expect(places.passOver(`whep_${100 + rememberedEndpoints - 1}`)).toBe(true);
  });
});
