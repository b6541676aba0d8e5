import { startScriptedReceiver } from '../scriptedReceiver.js';
import { callJson, jsonOf, latencies, sleep } from './client.js';

/**
 * Issue 40, finding 6: `attackerKeys.length` free accounts (the issue: 20) each point their one webhook endpoint at a
 * receiver that never answers, and make deliveries due (`requestsPerAttacker` echo requests each, one
 * `request.completed` per request). Meanwhile another account, with its endpoint on a receiver that answers at once,
 * submits one request every `probeEveryMs`: the delay from its `202` (echo completes at once) to its delivery's arrival
 * is that account's delivery delay. Before the fix the sender's places are bounded per endpoint, not per account, and
 * the hanging endpoints hold all of them for 10 s at a time.
 *
 * Endpoints can only be added by the operator (the CLI) or on the dashboard: the caller adds them, before the attack,
 * at the URLs of `startWebhookReceivers` (the server must allow `http://` and private networks).
 */

/** A receiver that never answers (every attacker's endpoint) and one that answers `200` at once (the probe's). */
export const startWebhookReceivers = async () => {
  const hanging = await startScriptedReceiver({ answer: () => 'hang' });
  const healthy = await startScriptedReceiver({ answer: () => 200 });
  return {
    hanging,
    healthy,
    /** The endpoint of attacker `i`. */
    attackerUrl: (i: number) => hanging.url(`/attacker-${i}`),
    probeUrl: healthy.url('/probe'),
    close: async () => {
      await hanging.close();
      await healthy.close();
    },
  };
};
export type WebhookReceivers = Awaited<ReturnType<typeof startWebhookReceivers>>;

export type HangingWebhooksOptions = {
  readonly url: string;
  readonly receivers: WebhookReceivers;
  /** The attackers' keys, each account's endpoint at `receivers.attackerUrl(i)`. */
  readonly attackerKeys: readonly string[];
  /** The probing account's key, its endpoint at `receivers.probeUrl`. */
  readonly probeKey: string;
  readonly requestsPerAttacker?: number;
  readonly probeEveryMs?: number;
  /** How long the probe submits. */
  readonly durationMs: number;
  /** How long, after the last probe, its deliveries are waited for. */
  readonly drainMs?: number;
};

export type HangingWebhooksOutcome = {
  /** The attackers' requests accepted (`202`), and the posts the hanging receiver got (attempts made). */
  readonly attackerRequests: number;
  readonly hangingPosts: number;
  /** The probe's requests, and those whose delivery arrived. */
  readonly probes: number;
  readonly delivered: number;
  /** Delay of the probe's deliveries, from its `202` to the delivery's arrival, in ms. */
  readonly delayP50Ms: number;
  readonly delayP99Ms: number;
  readonly delayMaxMs: number;
};

/** The first `request.completed` delivery of each request that reached the probe's receiver, by request id. */
const arrivalsAt = (receivers: WebhookReceivers): Map<string, number> => {
  const seen = new Map<string, number>();
  for (const post of receivers.healthy.to('/probe')) {
    const event = JSON.parse(post.body) as { type?: string; data?: { id?: string } };
    const id = event.data?.id;
    if (event.type === 'request.completed' && id !== undefined && !seen.has(id)) seen.set(id, post.at);
  }
  return seen;
};

export const hangingWebhooks = async (options: HangingWebhooksOptions): Promise<HangingWebhooksOutcome> => {
  const { url, receivers } = options;
  const postsBefore = receivers.hanging.posted.length;
  // Deliveries made due: each attacker's requests complete at once (echo), each completion one delivery. A free
  // plan's submits come in a burst and then one a second: a refusal waits a second (bounded by the probe's time).
  let attackerRequests = 0;
  const until = performance.now() + options.durationMs;
  await Promise.all(
    options.attackerKeys.map(async (key, i) => {
      for (let n = 0; n < (options.requestsPerAttacker ?? 8) && performance.now() < until; ) {
        const answer = await callJson(
          url,
          'POST',
          '/v1/ai',
          key,
          { model: 'echo', prompt: `attacker ${i} ${n}` },
          10_000,
        );
        if (answer.status === 202) {
          attackerRequests++;
          n++;
        } else await sleep(1_000);
      }
    }),
  );

  const submitted = new Map<string, number>();
  const started = performance.now();
  for (let n = 0; performance.now() - started < options.durationMs; n++) {
    const answer = await callJson(
      url,
      'POST',
      '/v1/ai',
      options.probeKey,
      { model: 'echo', prompt: `probe ${n}` },
      10_000,
    );
    const reqId = jsonOf<{ request_id: string }>(answer)?.request_id;
    // The receiver stamps arrivals with Date.now() (same machine, same clock).
    if (answer.status === 202 && reqId !== undefined) submitted.set(reqId, Date.now());
    await sleep(Math.max(0, started + (n + 1) * (options.probeEveryMs ?? 500) - performance.now()));
  }
  const drainUntil = performance.now() + (options.drainMs ?? 30_000);
  while (performance.now() < drainUntil) {
    const arrived = arrivalsAt(receivers);
    if ([...submitted.keys()].every((id) => arrived.has(id))) break;
    await sleep(250);
  }
  const arrived = arrivalsAt(receivers);
  const delays = [...submitted].flatMap(([id, at]) => {
    const received = arrived.get(id);
    return received === undefined ? [] : [received - at];
  });
  const summary = latencies(delays);
  return {
    attackerRequests,
    hangingPosts: receivers.hanging.posted.length - postsBefore,
    probes: submitted.size,
    delivered: delays.length,
    delayP50Ms: summary.p50Ms,
    delayP99Ms: summary.p99Ms,
    delayMaxMs: summary.maxMs,
  };
};
