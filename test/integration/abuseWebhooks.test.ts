import { describe, expect, it } from 'vitest';
import { systemClock } from '../../src/ports/Clock.js';
import { describeFigures, rssMiB, watchBystander } from '../support/bystander.js';
import { fileSandboxes, sleep, startServer } from '../support/processes.js';
import { type ScriptedReceiver, startScriptedReceiver } from '../support/scriptedReceiver.js';
import { startTestApp } from '../support/testApp.js';
import { addWebhookEndpoint } from '../support/webhookEndpoints.js';

/**
 * Issue 40, finding 6, on a real `airs serve` (LMDB), scaled to seconds: 20 free accounts each point their one
 * endpoint at a receiver that never answers and make deliveries due (submits that complete), while a bystander
 * account with an endpoint that answers keeps submitting. Before, each hanging endpoint took 4 of the sender's places
 * and 20 of them took all: the bystander's deliveries waited for the hanging posts to end at their 10 s bound (14.7 s
 * median delay at 64 places). Now an endpoint that has not answered holds one place, and such endpoints together half
 * of them (8 of the 16 here), so every delivery of the bystander is posted while the first hanging posts are still
 * open: an order the receiver sees, not a time.
 *
 * The bound on the server's peak RSS: its RSS before the attack plus 100 MB. What the attack may cost: a few dozen
 * sockets and deliveries (a few KB each); the rest is margin for V8's heap on a loaded machine.
 */

const newBox = fileSandboxes();

const attackers = 20;
const maxInFlight = 16;
const unansweredPlaces = maxInFlight / 2;
const measured = 10;

const webhooks = {
  allowHttp: true,
  allowPrivateNetworks: true,
  retentionHours: 72,
  maxInFlight,
  maxInFlightPerEndpoint: 4,
  maxInFlightPerAccount: 8,
};

const percentile = (values: readonly number[], share: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] ?? Number.NaN;
};

/** Submits `count` requests of the bystander one after another; resolves with when each was sent, by request id. */
const submitMeasured = async (url: string, key: string, count: number, label: string) => {
  const sentAt = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const began = Date.now();
    const answer = await fetch(`${url}/v1/ai`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'echo', prompt: `${label} ${i}` }),
    });
    const body = (await answer.json()) as { request_id: string };
    expect(answer.status).toBe(202);
    sentAt.set(body.request_id, began);
    await sleep(100);
  }
  return sentAt;
};

/** The bystander's deliveries the receiver got: when each arrived, by the request id it is about. */
const arrivals = (receiver: ScriptedReceiver) =>
  new Map(receiver.to('/ok').map((post) => [JSON.parse(post.body).data.id as string, post.at]));

/** How long each of `sentAt`'s requests took from its submit to its delivery's arrival, in ms. */
const delays = (receiver: ScriptedReceiver, sentAt: ReadonlyMap<string, number>) => {
  const arrived = arrivals(receiver);
  return [...sentAt].map(([reqId, at]) => (arrived.get(reqId) ?? Number.POSITIVE_INFINITY) - at);
};

const hangingPath = (path: string) => path.startsWith('/hang/');

describe('Webhook endpoints that never answer, from many free accounts (a real airs serve)', {
  timeout: 180_000,
}, () => {
  it("posts every delivery of a bystander's endpoint while the hanging posts still hold their places, which are one per endpoint and half of all at most", async () => {
    const box = newBox('airs-abuse-webhooks');
    const receiver = await startScriptedReceiver({ answer: (post) => (hangingPath(post.path) ? 'hang' : 200) });
    try {
      const models = [{ id: 'echo', provider: 'echo' as const }];
      box.writeConfig({ models, webhooks: { allowHttp: true, allowPrivateNetworks: true, maxInFlight } });
      // Accounts and endpoints written as `airs accounts create`, `keys create` and `webhooks add` write them (the
      // same services, in-process on the data directory): sixty CLI runs would take minutes on a loaded machine.
      const setup = await startTestApp({
        dataDir: box.dataDir,
        store: 'lmdb',
        clock: systemClock,
        config: { models: [{ id: 'echo', provider: 'echo', delayMs: 0, timeoutMs: 60_000 }], webhooks },
      });
      const bystander = await setup.account('scale');
      await addWebhookEndpoint(setup, { accountId: bystander.accountId, url: receiver.url('/ok') });
      const attackerKeys: string[] = [];
      for (let i = 0; i < attackers; i++) {
        const attacker = await setup.account('free');
        await addWebhookEndpoint(setup, { accountId: attacker.accountId, url: receiver.url(`/hang/${i}`) });
        attackerKeys.push(attacker.key);
      }
      await setup.stop({ keepData: true });

      const server = await startServer(box);
      const pid = server.child.pid as number;
      const watched = { url: server.url, key: bystander.key, pid };
      // Quiet: the bystander's endpoint answers its first deliveries (it is an endpoint that answers from then on).
      const quietWatch = watchBystander(watched);
      const quietSent = await submitMeasured(server.url, bystander.key, measured, 'quiet');
      const quiet = await quietWatch.stop();
      const rssBefore = rssMiB(pid);

      // The attack: every attacker's deliveries due at once, their posts hanging.
      await Promise.all(
        attackerKeys.map(async (key) => {
          for (let n = 0; n < 3; n++) {
            const answer = await fetch(`${server.url}/v1/ai`, {
              method: 'POST',
              headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
              body: JSON.stringify({ model: 'echo', prompt: `hang ${n}` }),
            });
            expect(answer.status).toBe(202);
          }
        }),
      );
      const hangingOpen = () => receiver.happened.filter((e) => hangingPath(e.path) && e.event === 'opened').length;
      for (let tries = 0; hangingOpen() < unansweredPlaces; tries++) {
        expect(tries).toBeLessThan(500);
        await sleep(20);
      }
      const attackWatch = watchBystander(watched);
      const attackSent = await submitMeasured(server.url, bystander.key, measured, 'attack');
      const underAttack = await attackWatch.stop();

      // Every submit of the bystander that was accepted has its delivery (those of the watch's submits too): waited
      // for (a minute at most: before issue 40 they came only as hanging posts ended), then the figures, then checked.
      const accepted =
        quiet.submits + underAttack.submits - countRefused(quiet.refused) - countRefused(underAttack.refused);
      const expected = accepted + quietSent.size + attackSent.size;
      for (let waited = 0; arrivals(receiver).size < expected && waited < 60_000; waited += 20) await sleep(20);

      // All of them were posted before any hanging post ended (the first end at the sender's 10 s bound).
      const lastBystanderPost = receiver.happened.reduce(
        (last, e, index) => (e.path === '/ok' && e.event === 'opened' ? index : last),
        -1,
      );
      const firstHangingEnd = receiver.happened.findIndex((e) => hangingPath(e.path) && e.event === 'closed');
      const quietDelays = delays(receiver, quietSent);
      const attackDelays = delays(receiver, attackSent);
      let open = 0;
      let mostOpen = 0;
      for (const e of receiver.happened.filter((one) => hangingPath(one.path))) {
        open += e.event === 'opened' ? 1 : -1;
        mostOpen = Math.max(mostOpen, open);
      }
      console.log(describeFigures('bystander, quiet', quiet));
      console.log(describeFigures(`bystander, ${attackers} hanging endpoints`, underAttack));
      console.log(
        `bystander delivery delay: quiet p50 ${percentile(quietDelays, 0.5)} ms max ${Math.max(...quietDelays)} ms; ` +
          `under attack p50 ${percentile(attackDelays, 0.5)} ms max ${Math.max(...attackDelays)} ms; ` +
          `hanging posts open at most ${mostOpen} at once (of ${maxInFlight} places); RSS before the attack ` +
          `${rssBefore.toFixed(0)} MiB, peak ${underAttack.rssPeakMiB.toFixed(0)} MiB`,
      );
      expect(arrivals(receiver).size, 'the bystander deliveries that arrived').toBe(expected);
      expect(lastBystanderPost).toBeGreaterThan(0);
      expect(firstHangingEnd === -1 || lastBystanderPost < firstHangingEnd).toBe(true);
      // The hanging endpoints held half of the places at most, one each.
      expect(mostOpen).toBe(unansweredPlaces);
      for (let i = 0; i < attackers; i++) expect(receiver.mostOpen(`/hang/${i}`)).toBeLessThanOrEqual(1);
      expect(underAttack.refused).toEqual({});
      expect(underAttack.rssPeakMiB).toBeLessThan(rssBefore + 100);
      await server.stop();
    } finally {
      await receiver.close();
    }
  });
});

/** The watch's submits that were not accepted (its `/healthz` failures are counted apart). */
const countRefused = (refused: Readonly<Record<string, number>>) =>
  Object.entries(refused).reduce((sum, [what, count]) => (what === 'healthz' ? sum : sum + count), 0);
