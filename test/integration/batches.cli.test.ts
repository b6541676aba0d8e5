import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Command } from '../../src/domain/commands.js';
import { batchWhen, chatLines, createBatch, fileContent, isEnded, uploadLines } from '../support/batches.js';
import { withLmdbStore } from '../support/lmdbData.js';
import {
  type CliResult,
  cliJson,
  createAccountWithKey,
  fileSandboxes,
  runCli,
  type Sandbox,
} from '../support/processes.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * `airs batches list | show | cancel` as an operator runs them: the built CLI against a data directory whose batches
 * were made through the store's commit, as a server's Batches service and batch runner make them (creation,
 * the runner's lease, validation that started the batch or failed it).
 */

type BatchJson = {
  id: string;
  object: string;
  status: string;
  endpoint: string;
  model: string | null;
  input_file_id: string;
  account_id: string;
  created_at: number;
  request_counts: { total: number; completed: number; failed: number };
  errors: { data: Array<{ code: string; line: number; message: string }> } | null;
  metadata: Record<string, string> | null;
};
type ShownJson = BatchJson & {
  lines: {
    total: number;
    queued: number;
    pending: number;
    completed: number;
    failed: number;
    input_tokens: number;
    output_tokens: number;
  };
};
type CancelJson = BatchJson & { previous_status: string; already_cancelled: boolean };
type ReplayJson = { events: Array<{ type: string; batchId?: string }> };

const newBox = fileSandboxes();
const minute = 60_000;
const owner = 'test-runner';

const idOf = (prefix: string) => `${prefix}${randomBytes(16).toString('base64url')}`;

/** A failure as the contract wants it: the exit status, nothing on stdout, exactly one line on stderr. */
const expectOneLineFailure = (result: CliResult, code: number, message: RegExp) => {
  expect(result.code, result.stderr).toBe(code);
  expect(result.stdout).toBe('');
  expect(result.stderr.trimEnd().split('\n'), result.stderr).toHaveLength(1);
  expect(result.stderr.trimEnd()).toMatch(message);
};

/** Commits `commands` into the sandbox's data directory in one write, each of which must be accepted. */
const commit = async (box: Sandbox, commands: readonly Command[]) => {
  const outcomes = await withLmdbStore(box.dataDir, (store) => store.commit({ commands }));
  for (const outcome of outcomes) if (!('events' in outcome)) throw new Error(`refused: ${(outcome as Error).message}`);
};

type Owner = { readonly accountId: string; readonly keyId: string };

/** A batch's input file and the batch itself, made at `at` (what `POST /v1/files` and `POST /v1/batches` commit). */
const created = (batchId: string, who: Owner, at: number, metadata?: Record<string, string>): Command[] => {
  const fileId = idOf('file-');
  return [
    {
      type: 'File',
      fileId,
      command: {
        type: 'CreateFile',
        accountId: who.accountId,
        purpose: 'batch',
        filename: 'lines.jsonl',
        bytes: 321,
        sha256: '0'.repeat(64),
        now: at,
      },
    },
    {
      type: 'Batch',
      batchId,
      command: {
        type: 'CreateBatch',
        accountId: who.accountId,
        keyId: who.keyId,
        endpoint: '/v1/chat/completions',
        inputFileId: fileId,
        completionWindow: '24h',
        windowMs: 24 * 60 * minute,
        metadata: metadata === undefined ? undefined : JSON.stringify(metadata),
        now: at,
      },
    },
  ];
};

/** The runner takes the batch and finds `total` valid lines of `model`: it is in progress. */
const started = (batchId: string, total: number, model: string, at: number): Command[] => [
  { type: 'Batch', batchId, command: { type: 'TakeBatch', owner, leaseMs: minute, now: at } },
  { type: 'Batch', batchId, command: { type: 'StartBatch', owner, total, model, now: at } },
];

/** The runner takes the batch and refuses its file: it failed validation with these errors. */
const refused = (batchId: string, at: number, errors: readonly object[]): Command[] => [
  { type: 'Batch', batchId, command: { type: 'TakeBatch', owner, leaseMs: minute, now: at } },
  { type: 'Batch', batchId, command: { type: 'FailValidation', owner, errors: JSON.stringify(errors), now: at } },
];

// Each test runs the built CLI several times: a second or more each on a busy machine.
describe('airs batches on a data directory', { timeout: 120_000 }, () => {
  let box: Sandbox;
  let ada: Owner;
  let bob: Owner;
  const base = Date.now() - 3 * 60 * minute;
  // Made in this order, a minute apart: bob's sits between two of ada's.
  const validating = idOf('batch_');
  const bobs = idOf('batch_');
  const running = idOf('batch_');
  const failed = idOf('batch_');
  const toCancel = idOf('batch_');

  beforeAll(async () => {
    box = newBox('airs-batches-cli');
    ada = await createAccountWithKey(box, 'ada@example.com');
    bob = await createAccountWithKey(box, 'bob@example.com');
    await commit(box, [
      ...created(validating, ada, base),
      ...created(bobs, bob, base + minute),
      ...started(bobs, 7, 'echo', base + minute + 1000),
      ...created(running, ada, base + 2 * minute, { job: 'nightly' }),
      ...started(running, 3, 'echo', base + 2 * minute + 1000),
      ...created(failed, ada, base + 3 * minute),
      ...refused(failed, base + 3 * minute + 1000, [
        { code: 'invalid_json', line: 2, message: 'line 2 is not JSON', param: null },
        { code: 'duplicate_custom_id', line: 5, message: 'custom_id "a" is on line 1 too', param: 'custom_id' },
      ]),
      ...created(toCancel, ada, base + 4 * minute),
      ...started(toCancel, 4, 'echo', base + 4 * minute + 1000),
    ]);
  }, 30_000);

  it('lists every account’s batches newest first, one line each with status, endpoint, model, progress and account', async () => {
    const result = await runCli(box, ['batches', 'list']);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe(`airs: data directory ${box.dataDir} (from AIRS_DATA_DIR)\n`);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.map((line) => line.split(' ')[0])).toEqual([toCancel, failed, running, bobs, validating]);
    const created = `${new Date(base + 2 * minute).toISOString().slice(0, 19)}Z`;
    expect(lines[2]).toBe(
      `${running}  in_progress  /v1/chat/completions  echo  0/3 done (0%: 0 completed, 0 failed)  created ${created}  account ${ada.accountId}`,
    );
    expect(lines[3]).toContain(`account ${bob.accountId}`);
    expect(lines[4]).toMatch(new RegExp(`^${validating}  validating   /v1/chat/completions  -  0/0 done`));
    expect(lines[1]).toMatch(/^batch_\S+ {2}failed {7}\/v1\/chat\/completions {2}- {2}0\/0 done/);
  });

  it('lists one account’s batches with --account, and --json gives the API’s batch objects with their account', async () => {
    const listed = await cliJson<BatchJson[]>(box, ['batches', 'list', '--account', ada.accountId]);

    expect(listed.map((batch) => batch.id)).toEqual([toCancel, failed, running, validating]);
    expect(listed.every((batch) => batch.object === 'batch' && batch.account_id === ada.accountId)).toBe(true);
    expect(listed[2]).toMatchObject({
      status: 'in_progress',
      endpoint: '/v1/chat/completions',
      model: 'echo',
      request_counts: { total: 3, completed: 0, failed: 0 },
      metadata: { job: 'nightly' },
      created_at: Math.floor((base + 2 * minute) / 1000),
    });
    const bobsOnly = await cliJson<BatchJson[]>(box, ['batches', 'list', '--account', bob.accountId]);
    expect(bobsOnly.map((batch) => batch.id)).toEqual([bobs]);
  });

  it('shows a batch as the API shows it, with its lines’ counts, in words and as JSON', async () => {
    const text = await runCli(box, ['batches', 'show', running]);
    const json = await cliJson<ShownJson>(box, ['batches', 'show', running]);

    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain(`batch ${running} (account ${ada.accountId})\n`);
    expect(text.stdout).toContain('  status        in_progress\n');
    expect(text.stdout).toContain('  model         echo\n');
    expect(text.stdout).toContain(`  input file    ${json.input_file_id}\n`);
    expect(text.stdout).toContain('  output file   -\n');
    expect(text.stdout).toContain('  progress      0 of 3 lines done (0%): 0 completed, 0 failed\n');
    expect(text.stdout).toContain('  metadata      {"job":"nightly"}\n');
    expect(json).toMatchObject({
      id: running,
      object: 'batch',
      status: 'in_progress',
      account_id: ada.accountId,
      request_counts: { total: 3, completed: 0, failed: 0 },
      lines: { total: 3, queued: 0, pending: 0, completed: 0, failed: 0, input_tokens: 0, output_tokens: 0 },
    });
  });

  it('shows a batch that failed validation with the errors of its lines', async () => {
    const text = await runCli(box, ['batches', 'show', failed]);
    const json = await cliJson<ShownJson>(box, ['batches', 'show', failed]);

    expect(text.stdout).toContain('  status        failed\n');
    expect(text.stdout).toContain('  errors        2\n    line 2: invalid_json: line 2 is not JSON\n');
    expect(text.stdout).toContain('    line 5: duplicate_custom_id: custom_id "a" is on line 1 too\n');
    expect(json.errors?.data.map((error) => error.code)).toEqual(['invalid_json', 'duplicate_custom_id']);
  });

  it('cancels an in-progress batch of any account in one line; it is then cancelling and the log holds the request', async () => {
    const result = await runCli(box, ['batches', 'cancel', toCancel]);

    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `batch ${toCancel} is cancelling (it was in progress, 0 of 4 lines done; its queued lines will not run and its running ones finish or are stopped; account ${ada.accountId}); a running server writes its files and ends it cancelled\n`,
    );
    expect(result.stderr).toBe(`airs: data directory ${box.dataDir} (from AIRS_DATA_DIR)\n`);
    expect((await cliJson<ShownJson>(box, ['batches', 'show', toCancel])).status).toBe('cancelling');

    // Again: said so, nothing changed, exit 0.
    const again = await runCli(box, ['batches', 'cancel', toCancel]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^batch ${toCancel} was already being cancelled \\(since .+\\); nothing changed\\n$`),
    );
    const json = await cliJson<CancelJson>(box, ['batches', 'cancel', toCancel]);
    expect(json).toMatchObject({
      id: toCancel,
      status: 'cancelling',
      previous_status: 'cancelling',
      already_cancelled: true,
    });
    // One cancel in the log, for all three.
    const replay = await cliJson<ReplayJson>(box, ['replay']);
    expect(replay.events.filter((e) => e.type === 'BatchCancelRequested').map((e) => e.batchId)).toEqual([toCancel]);
  });

  it('cancels a validating batch, with --json as one document', async () => {
    const json = await cliJson<CancelJson>(box, ['batches', 'cancel', validating]);

    expect(json).toMatchObject({
      id: validating,
      status: 'cancelling',
      previous_status: 'validating',
      already_cancelled: false,
      account_id: ada.accountId,
    });
  });

  it('refuses to cancel a batch that failed validation, with one line saying why, exit 1', async () => {
    expectOneLineFailure(
      await runCli(box, ['batches', 'cancel', failed]),
      1,
      new RegExp(
        `^airs: batch ${failed} cannot be cancelled: it failed validation at .+; only a validating, in-progress or finalizing batch can be cancelled$`,
      ),
    );
    expect((await cliJson<ShownJson>(box, ['batches', 'show', failed])).status).toBe('failed');
  });

  it('answers unknown batch ids and an unknown account with one line and exit 1, also with --json', async () => {
    const unknown = idOf('batch_');
    for (const args of [
      ['batches', 'show', unknown],
      ['batches', 'cancel', unknown, '--json'],
    ])
      expectOneLineFailure(await runCli(box, args), 1, new RegExp(`^airs: no batch ${unknown}$`));
    // Not even the form of a batch id: the same answer, and the store is never asked.
    expectOneLineFailure(await runCli(box, ['batches', 'show', 'req_x']), 1, /^airs: no batch req_x$/);
    expectOneLineFailure(
      await runCli(box, ['batches', 'list', '--account', 'acct_nobody']),
      1,
      /^airs: no account acct_nobody$/,
    );
  });

  it('says there are no batches on a service without any, and refuses a data directory without a database', async () => {
    const empty = newBox('airs-batches-empty');
    await createAccountWithKey(empty, 'empty@example.com');
    const none = await runCli(empty, ['batches', 'list']);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe('no batches\n');
    expect(await cliJson(empty, ['batches', 'list'])).toEqual([]);

    const missing = newBox('airs-batches-missing');
    expectOneLineFailure(await runCli(missing, ['batches', 'list']), 2, /^airs: no airs database in /);
  });
});

describe('airs batches while the server runs them', { timeout: 120_000 }, () => {
  const serve = servedAirs();
  let served: ServedAirs;
  beforeAll(async () => {
    served = await serve('airs-batches-cli-serve');
  }, 60_000);

  it('shows a batch the server ran as the API shows it: its files, counts of completed and failed lines, and usage', async () => {
    const { url, key, box } = served;
    // Three lines an echo answers, and one whose attempts all time out: it fails, into the error file.
    const fileId = await uploadLines(url, key, [
      ...chatLines('echo', ['one', 'two', 'three']),
      { ...chatLines('doomed', ['never'])[0], custom_id: 'doomed' },
    ]);
    const { id } = await createBatch(url, key, fileId);
    const ended = await batchWhen(url, key, id, isEnded);
    expect(ended.status).toBe('completed');

    const shown = await cliJson<ShownJson & { output_file_id: string; error_file_id: string }>(box, [
      'batches',
      'show',
      id,
    ]);
    const listed = await runCli(box, ['batches', 'list']);
    const refused = await runCli(box, ['batches', 'cancel', id]);

    expect(shown).toMatchObject({
      id,
      status: 'completed',
      output_file_id: ended.output_file_id,
      error_file_id: ended.error_file_id,
      request_counts: { total: 4, completed: 3, failed: 1 },
      lines: { total: 4, queued: 4, pending: 0, completed: 3, failed: 1 },
    });
    expect(shown.lines.input_tokens).toBeGreaterThan(0);
    expect((await fileContent(url, key, shown.error_file_id)).toString()).toContain('"custom_id":"doomed"');
    expect(listed.stdout).toContain(
      `${id}  completed    /v1/chat/completions  -  4/4 done (100%: 3 completed, 1 failed)`,
    );
    expectOneLineFailure(
      refused,
      1,
      new RegExp(
        `^airs: batch ${id} cannot be cancelled: it completed at .+; only a validating, in-progress or finalizing batch`,
      ),
    );
  });

  it('cancels a running batch from the CLI; the server then ends it cancelled, its lines not run in the error file', async () => {
    const { url, key, box } = served;
    const prompts = Array.from({ length: 12 }, (_, i) => `slow ${i}`);
    const { id } = await createBatch(url, key, await uploadLines(url, key, chatLines('slow', prompts)));
    await batchWhen(url, key, id, (batch) => batch.status === 'in_progress');

    const cancelled = await cliJson<CancelJson>(box, ['batches', 'cancel', id]);

    expect(cancelled).toMatchObject({ id, previous_status: 'in_progress', already_cancelled: false });
    expect(['cancelling', 'cancelled']).toContain(cancelled.status);
    const ended = await batchWhen(url, key, id, isEnded, 60_000);
    expect(ended.status).toBe('cancelled');
    expect(ended.request_counts.completed + ended.request_counts.failed).toBe(12);
    const errors = (await fileContent(url, key, ended.error_file_id as string)).toString().trimEnd().split('\n');
    expect(errors).toHaveLength(ended.request_counts.failed);
    expect(errors.some((line) => line.includes('"batch_cancelled"'))).toBe(true);
  });
});
