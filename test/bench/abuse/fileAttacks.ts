/** The attacks of `--only=abuse` made of files: filtered lists, parallel uploads, the disk floor, malformed forms. */
import { defaultPlans } from '../../../src/domain/plans.js';
import { jsonOf, uploadFile } from '../../support/attacks/client.js';
import { diskFloor } from '../../support/attacks/diskFloor.js';
import { malformedForms } from '../../support/attacks/malformedForms.js';
import { parallelUploads } from '../../support/attacks/parallelUploads.js';
import { listFilesByPurpose, type UploadManyOutcome, uploadManyFiles } from '../../support/attacks/purposeFileLists.js';
import type { Context } from '../context.js';
import { type AttackResult, mib, runAttack, runCheck, statusCounts } from './attack.js';
import type { Bystander } from './harness.js';

const freeQuota = defaultPlans.free.maxFileStorageBytes;
const keyOf = (accounts: readonly { key: string }[]) => (accounts[0] as { key: string }).key;

export const fileListsAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.fileLists;
  return runAttack(context, bystander, {
    name: 'file-lists',
    title: `2. purpose-filtered file lists (limit=1, 10/s) over ${sizes.files.toLocaleString('en')} files of one free account`,
    label: 'file-lists',
    // The uploads take 5.6 h at the free plan's pace: its submit budget is raised so they take seconds.
    config: { plans: { free: { submitsPerMinute: 1_000_000 } } },
    attackers: 1,
    attackerPlan: 'free',
    setup:
      "plans at their defaults but the free plan's submitsPerMinute (1,000,000: the uploads in seconds rather than hours); its poll budget (600/min) is the default, and the lists stay within it",
    growthBoundBytes: freeQuota,
    growthBoundName: "the attacker's quota (1 GiB)",
    prepare: (target) =>
      uploadManyFiles({
        url: target.url,
        attackerKey: keyOf(target.attackers),
        files: sizes.files,
        timeoutMs: sizes.uploadTimeoutSec * 1000,
      }),
    attack: (target) =>
      listFilesByPurpose({ url: target.url, attackerKey: keyOf(target.attackers), durationMs: sizes.listSec * 1000 }),
    outcome: (o, _measured, prepared) => {
      const uploaded = prepared as UploadManyOutcome;
      return {
        target: 'reported: the lists themselves (each reads only what it returns once fixed)',
        measured: `${o.calls} lists: p50 ${o.p50Ms.toFixed(0)} ms, p99 ${o.p99Ms.toFixed(0)} ms`,
        met: null,
        detail: `${uploaded.stored.toLocaleString('en')} files stored in ${uploaded.seconds.toFixed(0)} s (uploads ${statusCounts(uploaded.statuses)}); lists ${statusCounts(o.statuses)}, max ${o.maxMs.toFixed(0)} ms; filter purpose=batch_output (the uploads are all batch: it finds none)`,
      };
    },
  });
};

export const uploadsAttack = (context: Context, bystander: Bystander): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.uploads;
  const quota = sizes.quotaMiB === null ? freeQuota : sizes.quotaMiB * 1024 * 1024;
  const fileBytes = sizes.fileMiB * 1024 * 1024;
  return runAttack(context, bystander, {
    name: 'uploads',
    title: `3. parallel uploads beyond the quota (${sizes.uploads} x ${sizes.fileMiB} MiB from one free account)`,
    label: 'uploads',
    // Ten 199 MiB uploads at once take longer than the default 60 s a request may take on the shared 2-CPU machine
    // (all ten were answered 408): what is measured is the quota, not that bound.
    config: {
      http: { requestTimeoutSeconds: sizes.timeoutSec },
      ...(sizes.quotaMiB === null ? {} : { plans: { free: { maxFileStorageBytes: quota } } }),
    },
    attackers: 1,
    attackerPlan: 'free',
    setup: `${
      sizes.quotaMiB === null
        ? 'plans at their defaults (free: 1 GiB of files; batches.maxFileBytes 200 MiB)'
        : `the free plan's maxFileStorageBytes scaled down to ${sizes.quotaMiB} MiB`
    }; http.requestTimeoutSeconds ${sizes.timeoutSec} (at the default 60 s, ten 199 MiB uploads at once on this machine were all answered 408)`,
    growthBoundBytes: quota,
    growthBoundName: `the attacker's quota (${quota >= 1024 ** 3 ? `${quota / 1024 ** 3} GiB` : `${mib(quota).toFixed(0)} MiB`})`,
    attack: (target) =>
      parallelUploads({
        url: target.url,
        attackerKey: keyOf(target.attackers),
        uploads: sizes.uploads,
        fileBytes,
        timeoutMs: sizes.timeoutSec * 1000,
      }),
    outcome: (o) => {
      const accepted = o.statuses['200'] ?? 0;
      const fits = Math.floor(quota / fileBytes);
      return {
        target: `at most ${fits} accepted (what the quota holds)`,
        measured: `${statusCounts(o.statuses)} in ${o.seconds.toFixed(1)} s`,
        met: context.options.smoke ? null : accepted <= fits,
        detail: `each: ${o.each.map((one) => `${one.status}${one.code === undefined ? '' : ` ${one.code}`} ${one.seconds} s`).join('; ')}`,
      };
    },
  });
};

export const diskFloorCheck = (context: Context): Promise<AttackResult> => {
  const sizes = context.options.sizes.abuse.diskFloor;
  const uploadBytes = sizes.uploadMiB * 1024 * 1024;
  return runCheck(context, {
    name: 'disk-floor',
    title: `3b. under the disk floor: a submit, a ${sizes.uploadMiB} MiB upload and a batch create`,
    label: 'disk-floor',
    config: { storage: { minFreeMegabytes: 1_048_576 } },
    attackers: 1,
    attackerPlan: 'free',
    setup:
      'a first server with the defaults takes a small batch file; then the same data directory is served with storage.minFreeMegabytes 1,048,576 (1 TiB, above the free space of any disk here), so the server is below its floor',
    growthBoundBytes: uploadBytes / 2,
    growthBoundName: "half the refused upload's size",
    before: {
      config: {},
      run: async (target) => {
        const line =
          '{"custom_id":"c","method":"POST","url":"/v1/chat/completions","body":{"model":"echo","messages":[{"role":"user","content":"hi"}]}}\n';
        const answer = await uploadFile(target.url, keyOf(target.attackers), line);
        const id = jsonOf<{ id: string }>(answer)?.id;
        if (answer.status !== 200 || id === undefined) throw new Error(`the first upload answered ${answer.status}`);
        return id;
      },
    },
    check: (target, fileId) =>
      diskFloor({ url: target.url, key: keyOf(target.attackers), uploadBytes, existingFileId: fileId as string }),
    outcome: (o) => ({
      target: 'the upload and the batch create are refused, as the submit is',
      measured: `submit ${o.submit.status}, upload ${o.upload.status}, batch create ${o.batchCreate.status}`,
      // Refused however the fix answers (503 as the submit, or 507); no answer at all is no refusal.
      met: [o.submit, o.upload, o.batchCreate].every((call) => call.status >= 400),
      detail:
        `upload: ${o.upload.code ?? '-'} ${o.upload.message ?? ''}; batch create: ${o.batchCreate.code ?? '-'} ${o.batchCreate.message ?? ''}`.slice(
          0,
          300,
        ),
    }),
  });
};

export const malformedFormsCheck = (context: Context): Promise<AttackResult> =>
  runCheck(context, {
    name: 'malformed-forms',
    title: '8. malformed upload forms (two file parts; no closing boundary)',
    label: 'malformed-forms',
    config: {},
    attackers: 1,
    attackerPlan: 'free',
    setup: 'config and plans at their defaults',
    growthBoundBytes: 1024 * 1024,
    growthBoundName: '1 MiB',
    check: (target) => malformedForms(target.url, keyOf(target.attackers)),
    outcome: (o) => ({
      target: "both answered 400, in OpenAI's error shape",
      measured: `two file parts ${o.twoFileParts.status}, no closing boundary ${o.noClosingBoundary.status}`,
      met: o.twoFileParts.status === 400 && o.noClosingBoundary.status === 400,
      detail: `${o.twoFileParts.message ?? '-'} | ${o.noClosingBoundary.message ?? '-'}`.slice(0, 300),
    }),
  });
