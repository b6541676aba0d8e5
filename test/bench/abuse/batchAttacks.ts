/** The attacks of `--only=abuse` made of batches: poisoned lines, large batches, many open batches, big answers. */
import { defaultPlans } from '../../../src/domain/plans.js';
import { bigAnswers, startBigAnswerUpstream } from '../../support/attacks/bigAnswers.js';
import type { BatchSeen } from '../../support/attacks/client.js';
import { largeBatches } from '../../support/attacks/largeBatches.js';
import { manyOpenBatches } from '../../support/attacks/manyOpenBatches.js';
import { poisonedLines } from '../../support/attacks/poisonedLines.js';
import type { Context } from '../context.js';
import { type AttackResult, counted, runAttack, statusCounts } from './attack.js';
import type { Bystander } from './harness.js';

const freeQuota = defaultPlans.free.maxFileStorageBytes;
/** The batches' statuses counted; when the server stopped answering, as they were last seen, said so. */
const statusesOf = (batches: readonly BatchSeen[]) => {
  const counts: Record<string, number> = {};
  for (const { status } of batches) counts[status] = (counts[status] ?? 0) + 1;
  const unanswered = Math.max(0, ...batches.map((batch) => batch.unanswered ?? 0));
  return `${statusCounts(counts)}${unanswered > 0 ? `, as last seen: the last ${unanswered} reads got no answer` : ''}`;
};
const lastSeen = (batch: BatchSeen) =>
  `${batch.status}${(batch.unanswered ?? 0) > 0 ? ` (as last seen: the last ${batch.unanswered} reads got no answer)` : ''}`;
const seconds = (value: number | null) => (value === null ? 'never' : `${value.toFixed(1)} s`);

export const poisonedLinesAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.poisonedLines;
  return runAttack(context, bystander, {
    name: 'poisoned-lines',
    title: `1. poisoned batch lines (${counted(sizes.accounts, 'free account')} x ${counted(sizes.batchesPerAccount, 'batch', 'batches')} of one line nested ${sizes.depth.toLocaleString('en')} deep)`,
    label: 'poisoned-lines',
    config: {},
    attackers: sizes.accounts,
    attackerPlan: 'free',
    setup: 'config and plans at their defaults',
    growthBoundBytes: sizes.accounts * freeQuota,
    growthBoundName: `the attackers' quota (${sizes.accounts} x 1 GiB)`,
    attack: (target) =>
      poisonedLines({
        url: target.url,
        attackerKeys: target.attackers.map((account) => account.key),
        batchesPerAccount: sizes.batchesPerAccount,
        depth: sizes.depth,
        watchMs: sizes.watchSec * 1000,
      }),
    outcome: (o) => {
      const failed = o.batches.filter((batch) => batch.status === 'failed' && batch.errors !== null).length;
      return {
        target: 'every poisoned batch ends failed, with its errors, within the watch',
        measured: `${failed} of ${o.batches.length} failed (${statusesOf(o.batches)})`,
        met: context.options.smoke ? null : o.batches.length > 0 && failed === o.batches.length,
        detail: `line of ${(o.lineBytes / 1e6).toFixed(1)} MB; all ended after ${seconds(o.allEndedAfterSeconds)}; first errors ${JSON.stringify(o.batches[0]?.errors ?? null).slice(0, 160)}`,
      };
    },
  });
};

export const largeBatchesAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.largeBatches;
  return runAttack(context, bystander, {
    name: 'large-batches',
    title: `4. large batches (${counted(sizes.accounts, 'free account')} x ${counted(sizes.batchesPerAccount, 'batch', 'batches')} of ${sizes.lines} lines of ${(sizes.promptChars / 1000).toFixed(0)} KB prompts)`,
    label: 'large-batches',
    config: {},
    attackers: sizes.accounts,
    attackerPlan: 'free',
    setup: 'config and plans at their defaults; every line on echo, every free-plan limit respected',
    growthBoundBytes: sizes.accounts * freeQuota,
    growthBoundName: `the attackers' quota (${sizes.accounts} x 1 GiB)`,
    attack: (target) =>
      largeBatches({
        url: target.url,
        attackerKeys: target.attackers.map((account) => account.key),
        batchesPerAccount: sizes.batchesPerAccount,
        linesPerBatch: sizes.lines,
        promptChars: sizes.promptChars,
        watchMs: sizes.watchSec * 1000,
      }),
    outcome: (o) => {
      const completed = o.batches.filter((batch) => batch.status === 'completed').length;
      return {
        target: 'every batch completes within the watch',
        measured: `${completed} of ${o.batches.length} completed (${statusesOf(o.batches)})`,
        met: context.options.smoke ? null : o.batches.length > 0 && completed === o.batches.length,
        detail: `files of ${(o.fileBytes / 1e6).toFixed(0)} MB; uploads ${statusCounts(o.uploads)}; creates ${statusCounts(o.creates)}; all ended after ${seconds(o.allEndedAfterSeconds)} (watched up to ${sizes.watchSec} s)`,
      };
    },
  });
};

/** A model whose calls take an hour, one at a time: the attackers' batches stay open. */
const stuckModel = { id: 'stuck', provider: 'echo', delayMs: 3_600_000, timeoutMs: 7_200_000, maxConcurrency: 1 };
const echoModel = { id: 'echo', provider: 'echo' };

export const openBatchesAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.openBatches;
  return runAttack(context, bystander, {
    name: 'open-batches',
    title: `5. many open batches (${sizes.batches.toLocaleString('en')} from ${counted(sizes.accounts, 'enterprise account')}, then the bystander's 10-line batch)`,
    label: 'open-batches',
    config: { models: [echoModel, stuckModel] },
    attackers: sizes.accounts,
    attackerPlan: 'enterprise',
    setup:
      "plans at their defaults (enterprise: 200 batches in progress each); models: echo, and `stuck` (echo with a 1 h delay, maxConcurrency 1) that keeps the attackers' one-line batches open",
    growthBoundBytes: sizes.accounts * defaultPlans.enterprise.maxFileStorageBytes,
    growthBoundName: `the attackers' quota (${sizes.accounts} x 1 TiB)`,
    attack: (target) =>
      manyOpenBatches({
        url: target.url,
        attackerKeys: target.attackers.map((account) => account.key),
        openBatches: sizes.batches,
        stuckModel: stuckModel.id,
        probeKey: target.bystander.key,
        probeTimeoutMs: sizes.probeTimeoutSec * 1000,
      }),
    outcome: (o) => ({
      target: "the bystander's new batch leaves validating within 5 s",
      measured: `after ${seconds(o.probeLeftValidatingAfterSeconds)}${o.probeLeftValidatingAfterSeconds === null ? ` (still ${o.probeStatus} after ${sizes.probeTimeoutSec} s)` : ` (${o.probeStatus})`}`,
      met: context.options.smoke
        ? null
        : o.probeLeftValidatingAfterSeconds !== null && o.probeLeftValidatingAfterSeconds <= 5,
      detail: `${o.opened} open batches made in ${o.createSeconds.toFixed(1)} s${o.failedCreates > 0 ? ` (${o.failedCreates} creates failed)` : ''}`,
    }),
  });
};

export const bigAnswersAttack = async (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.bigAnswers;
  const upstream = await startBigAnswerUpstream(sizes.answerMiB * 1024 * 1024);
  try {
    const bigModel = { id: 'big', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'big' };
    return await runAttack(context, bystander, {
      name: 'big-answers',
      title: `7. an upstream answering ${sizes.answerMiB} MiB per call (a batch of ${sizes.lines} lines on it)`,
      label: 'big-answers',
      config: { models: [echoModel, bigModel] },
      attackers: 1,
      attackerPlan: 'free',
      setup: `plans at their defaults; models: echo, and \`big\` (openai provider) on a local upstream that answers every call with ${sizes.answerMiB} MiB of text`,
      growthBoundBytes: freeQuota,
      growthBoundName: "the attacker's quota (1 GiB)",
      attack: (target) =>
        bigAnswers({
          url: target.url,
          attackerKey: (target.attackers[0] as { key: string }).key,
          model: bigModel.id,
          lines: sizes.lines,
          watchMs: sizes.watchSec * 1000,
          stuckMs: sizes.stuckSec * 1000,
          operatorCancel: (batchId) => target.airs(['batches', 'cancel', batchId]),
        }),
      outcome: (o) => {
        const cancels =
          o.accountCancel === undefined
            ? 'no cancel needed'
            : `account's cancel ${o.accountCancel.status} (${o.accountCancel.batchStatus}); operator's cancel exit ${o.operatorCancel?.code ?? '-'}: ${o.operatorCancel?.said.split('\n')[0]?.slice(0, 120) ?? ''}`;
        return {
          target: `the batch ends (its lines failed as the upstream's fault), never finalizing for ${sizes.stuckSec} s`,
          measured:
            o.endedAfterSeconds === null
              ? `${lastSeen(o.watched)} after ${seconds(o.watchedSeconds)}; ${lastSeen(o.final)} after the cancels`
              : `${o.final.status} after ${seconds(o.endedAfterSeconds)}`,
          met: context.options.smoke ? null : o.endedAfterSeconds !== null,
          detail: `finalizing seen after ${seconds(o.finalizingAfterSeconds)}; counts ${JSON.stringify(o.final.request_counts ?? null)}; ${cancels}; upstream calls ${upstream.calls()}`,
        };
      },
    });
  } finally {
    await upstream.close();
  }
};
