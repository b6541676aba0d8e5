/** The webhook attack of `--only=abuse`: endpoints that never answer, and another account's deliveries timed. */
import { defaultPlans } from '../../../src/domain/plans.js';
import {
  hangingWebhooks,
  startWebhookReceivers,
  type WebhookReceivers,
} from '../../support/attacks/hangingWebhooks.js';
import type { Context } from '../context.js';
import { type AttackResult, counted, runAttack } from './attack.js';
import type { Bystander, Target } from './harness.js';
import { withManagement } from './management.js';

/** The receivers, and every account's endpoint on them (the attackers' on the hanging one), added as the operator's
 * `airs webhooks add` adds them, beside the running server. */
const prepare = async (target: Target): Promise<WebhookReceivers> => {
  const receivers = await startWebhookReceivers();
  await withManagement(target.box, async (management) => {
    await management.addEndpoint(target.bystander.accountId, receivers.probeUrl);
    for (const [i, attacker] of target.attackers.entries())
      await management.addEndpoint(attacker.accountId, receivers.attackerUrl(i));
  });
  return receivers;
};

export const webhooksAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.webhooks;
  return runAttack(context, bystander, {
    name: 'webhooks',
    title: `6. hanging webhook endpoints (${counted(sizes.accounts, 'free account')}, ${sizes.requestsPerAttacker} deliveries each; the bystander's own deliveries timed)`,
    label: 'webhooks',
    // The receivers are on 127.0.0.1 over plain HTTP: refused by default (SSRF rules), allowed here.
    config: { webhooks: { allowHttp: true, allowPrivateNetworks: true } },
    attackers: sizes.accounts,
    attackerPlan: 'free',
    setup:
      'plans at their defaults (free: 1 endpoint); webhooks.allowHttp and allowPrivateNetworks on (the receivers are on 127.0.0.1); the sender at its defaults (64 places per process, 4 per endpoint, 10 s per attempt); endpoints added as airs webhooks add adds them, before the quiet watch',
    growthBoundBytes: sizes.accounts * defaultPlans.free.maxFileStorageBytes,
    growthBoundName: `the attackers' quota (${sizes.accounts} x 1 GiB)`,
    prepare,
    attack: (target, receivers) =>
      hangingWebhooks({
        url: target.url,
        receivers: receivers as WebhookReceivers,
        attackerKeys: target.attackers.map((account) => account.key),
        probeKey: target.bystander.key,
        requestsPerAttacker: sizes.requestsPerAttacker,
        durationMs: sizes.durationSec * 1000,
        drainMs: sizes.drainSec * 1000,
      }),
    cleanUp: async (receivers) => {
      await (receivers as WebhookReceivers | undefined)?.close();
    },
    outcome: (o) => ({
      target: "the bystander's deliveries arrive within 1 s (p99)",
      measured: `${o.delivered} of ${o.probes} delivered within ${sizes.drainSec} s of the last; of those p50 ${o.delayP50Ms.toFixed(0)} ms, p99 ${o.delayP99Ms.toFixed(0)} ms`,
      met: context.options.smoke ? null : o.delivered === o.probes && o.delayP99Ms <= 1_000,
      detail: `max ${o.delayMaxMs.toFixed(0)} ms; ${o.attackerRequests} attacker requests made deliveries due; the hanging receiver got ${o.hangingPosts} posts`,
    }),
  });
};
