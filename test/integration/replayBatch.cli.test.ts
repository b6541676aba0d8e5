import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isRefusal } from '../../src/domain/commands.js';
import { batchLogWrites, contentOf, done, line, open } from '../support/batchLog.js';
import { changeStoredBatch, withLmdbStore } from '../support/lmdbData.js';
import { cliJson, runCli, type Sandbox, sandbox } from '../support/processes.js';

type ReplayJson = {
  events: Array<{ type: string; seq: number; reqId?: string; batchId?: string; state?: string }>;
  final_states: Record<string, string>;
};

describe('replay --batch and --verify of batches, through the CLI', { timeout: 60_000 }, () => {
  let box: Sandbox;
  beforeAll(async () => {
    box = sandbox('airs-replay-batch');
    // The log is written in-process through the store, as the server writes it; no server runs.
    await withLmdbStore(box.dataDir, async (store) => {
      for (const commands of batchLogWrites)
        for (const outcome of await store.commit({ commands }))
          if (isRefusal(outcome) || outcome instanceof Error) throw outcome;
      // The bytes of the files that exist, as an upload and a finalizer store them: --verify checks them too.
      for (const fileId of ['file_in1', 'file_in2', 'file_out'])
        await store.files.write(
          fileId,
          (async function* () {
            yield contentOf(fileId);
          })(),
          1_000_000,
          1_000,
        );
    });
  });
  afterAll(() => box.remove());

  it('--batch shows the batch’s own events and all its lines’, in log order, with the state each reached', async () => {
    const json = await cliJson<ReplayJson>(box, ['replay', '--batch', done]);
    expect(
      json.events.map((e) => [e.type, e.batchId === undefined || e.reqId !== undefined ? e.reqId : e.batchId, e.state]),
    ).toEqual([
      ['BatchCreated', done, 'validating'],
      ['BatchTaken', done, 'validating'],
      ['BatchStarted', done, 'in_progress'],
      ['RequestQueued', line(done, 1), 'waiting'],
      ['RequestQueued', line(done, 2), 'waiting'],
      ['RequestQueued', line(done, 3), 'waiting'],
      ['RequestProcessingStarted', line(done, 1), 'processing'],
      ['RequestProcessingStarted', line(done, 2), 'processing'],
      ['RequestCompleted', line(done, 1), 'completed'],
      ['RequestFailed', line(done, 2), 'failed'],
      ['RequestCancelled', line(done, 3), 'cancelled'],
      ['BatchFinalizing', done, 'finalizing'],
      ['BatchEnded', done, 'completed'],
      ['RequestExpired', line(done, 1), 'expired'],
    ]);
    const seqs = json.events.map((e) => e.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    expect(json.final_states).toEqual({
      [done]: 'completed',
      [line(done, 1)]: 'expired',
      [line(done, 2)]: 'failed',
      [line(done, 3)]: 'cancelled',
    });
    // Nothing of the other batch, nor its line, which was queued among these.
    expect(JSON.stringify(json)).not.toContain(open);
    expect(JSON.stringify(json)).not.toContain(line(open, 1));
  });

  it('--batch in words: one line per event with the state it reached, then each one’s final state', async () => {
    const result = await runCli(box, ['replay', '--batch', open]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.filter((text) => text.includes(' #'))).toHaveLength(4);
    expect(lines.find((text) => text.includes('BatchStarted'))).toMatch(/→ in_progress /);
    expect(lines.find((text) => text.includes('RequestQueued'))).toMatch(/→ waiting .*customId=line-1/);
    expect(lines.slice(-2)).toEqual([`${open}: in_progress`, `${line(open, 1)}: waiting`]);
  });

  it('--account shows its batches’ and files’ events too, also those that name only the batch or the file', async () => {
    const mine = await cliJson<ReplayJson>(box, ['replay', '--account', 'acct_1']);
    const all = await cliJson<ReplayJson>(box, ['replay']);
    expect(mine.events.map((e) => e.seq)).toEqual(all.events.map((e) => e.seq));
    expect(mine.events.map((e) => e.type)).toEqual(expect.arrayContaining(['BatchTaken', 'BatchEnded', 'FileDeleted']));
    expect((await cliJson<ReplayJson>(box, ['replay', '--account', 'acct_other'])).events).toEqual([]);
  });

  it('--batch of a batch the log does not hold matches nothing; with --verify it is a usage error', async () => {
    const none = await runCli(box, ['replay', '--batch', 'batch_unknown']);
    expect(none.code).toBe(0);
    expect(none.stdout.trim()).toBe('no events match');
    const both = await runCli(box, ['replay', '--verify', '--batch', done]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/cannot be combined with --request, --account, --batch or --since/);
  });

  it('--verify passes on the untouched log and names a batch whose stored counts were changed', async () => {
    const clean = await runCli(box, ['replay', '--verify']);
    expect(clean.code, clean.stdout).toBe(0);
    expect(clean.stdout).toMatch(/every view matches the log \(.*, 2 batches, 3 files\)/);

    await changeStoredBatch(box.dataDir, done, (view) => ({ ...view, counts: { ...view.counts, queued: 4 } }));
    const tampered = await runCli(box, ['replay', '--verify', '--json']);
    expect(tampered.code).toBe(3);
    expect((JSON.parse(tampered.stdout) as { differences: string[] }).differences).toEqual([
      `batch ${done}: the stored counts differ from the log's (stored queued 4, completed 1, failed 2, tokens 10/4, answers 3 characters (0 kept); the log gives queued 3, completed 1, failed 2, tokens 10/4, answers 3 characters (0 kept))`,
    ]);
  });

  it("--verify names a file whose bytes are gone or are not the log's", async () => {
    await withLmdbStore(box.dataDir, async (store) => {
      await store.files.remove('file_in2');
      await store.files.remove('file_out');
      await store.files.write(
        'file_out',
        (async function* () {
          yield Buffer.from('not what the finalizer wrote\n');
        })(),
        1_000_000,
        1_000,
      );
    });
    const damaged = await runCli(box, ['replay', '--verify', '--json']);
    expect(damaged.code).toBe(3);
    const { differences } = JSON.parse(damaged.stdout) as { differences: string[] };
    expect(differences).toEqual(
      expect.arrayContaining([
        'file file_in2: the log made it but its bytes are missing',
        expect.stringMatching(/^file file_out: its bytes differ from the log's \(stored 29 bytes/),
      ]),
    );
  });
});
