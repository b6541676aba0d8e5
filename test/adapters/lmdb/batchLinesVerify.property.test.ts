import { rmSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { openLmdbStore } from '../../../src/adapters/lmdb/LmdbStore.js';
import { verifyViews } from '../../../src/adapters/lmdb/verify.js';
import type { BatchCommand } from '../../../src/domain/batch/decider.js';
import { lineRequestId } from '../../../src/domain/batch/lines.js';
import type { Command } from '../../../src/domain/commands.js';
import { tempDataDir } from '../../support/testApp.js';

const owner = 'proc_prop';
const batchIds = ['batch_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'batch_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'];
/** Times around the batches' window (200 ms) and the lines' expiry (made at 0..50, live 150 ms). */
const at = fc.integer({ min: 0, max: 400 });
const policy = { maxAttempts: 2, baseDelayMs: 10, maxDelayMs: 10 };
const batch = (batchId: string, command: BatchCommand): Command => ({ type: 'Batch', batchId, command });

/** Both batches made and started (three lines each), their input files uploaded. */
const setup: Command[] = batchIds.flatMap((batchId, i) => [
  {
    type: 'File',
    fileId: `file_${i}`,
    command: {
      type: 'CreateFile',
      accountId: 'acct_1',
      purpose: 'batch',
      filename: 'in.jsonl',
      bytes: 9,
      sha256: 'f'.repeat(64),
      now: 0,
    },
  },
  batch(batchId, {
    type: 'CreateBatch',
    accountId: 'acct_1',
    keyId: 'key_1',
    endpoint: '/v1/chat/completions',
    inputFileId: `file_${i}`,
    completionWindow: '24h',
    windowMs: 200,
    now: 0,
  }),
  batch(batchId, { type: 'TakeBatch', owner, leaseMs: 100_000, now: 0 }),
  batch(batchId, { type: 'StartBatch', owner, total: 3, now: 0 }),
]);

type Placed = { readonly position: number; readonly command: Command };

/**
 * One line's life as the server drives it: queued (perhaps started at once), then a few steps in order (most lines
 * end: completed with or without usage, failed, cancelled, expired), each step placed somewhere in the log.
 */
const lineLife = (batchId: string, n: number): fc.Arbitrary<Placed[]> =>
  fc
    .record({
      at: fc.integer({ min: 0, max: 50 }),
      startNow: fc.boolean(),
      steps: fc.array(fc.constantFrom('start', 'succeed', 'succeedBare', 'fail', 'cancel', 'expire'), {
        maxLength: 4,
      }),
      tokens: fc.integer({ min: 0, max: 50 }),
      positions: fc.array(fc.nat(999), { minLength: 5, maxLength: 5 }),
    })
    .map(({ at, startNow, steps, tokens, positions }) => {
      const reqId = lineRequestId(batchId, n);
      const commands: Command[] = [
        {
          type: 'Submit',
          reqId,
          accountId: 'acct_1',
          keyId: 'key_1',
          model: 'echo',
          promptChars: 1,
          prompt: 'x',
          ttlMs: 150,
          now: at,
          batchId,
          customId: `c${n}`,
          ...(startNow ? { startNow: { owner, leaseMs: 50 } } : {}),
        },
      ];
      steps.forEach((step, i) => {
        // Within the line's life (it expires at at + 150), but for an expiry.
        const now = at + 10 * (i + 1);
        if (step === 'start') commands.push({ type: 'StartAttempt', reqId, now });
        else if (step === 'succeed' || step === 'succeedBare')
          commands.push({
            type: 'RecordSuccess',
            reqId,
            responseChars: 1,
            response: 'y',
            now,
            ...(step === 'succeed' ? { inputTokens: tokens, outputTokens: tokens * 2 } : {}),
          });
        else if (step === 'fail') commands.push({ type: 'RecordFailure', reqId, reason: 'boom', policy, now });
        else if (step === 'cancel') commands.push({ type: 'Cancel', reqId, now });
        else commands.push({ type: 'Expire', reqId, now: at + 150 + i });
      });
      const sorted = [...positions].sort((x, y) => x - y);
      return commands.map((command, i) => ({ position: sorted[i] as number, command }));
    });

const batchCommand: fc.Arbitrary<Placed> = fc
  .record({
    batchId: fc.constantFrom(...batchIds),
    now: at,
    kind: fc.constantFrom('cancel', 'close', 'finalize', 'finalize', 'end', 'end', 'take'),
    position: fc.nat(999),
  })
  .map(({ batchId, now, kind, position }): Placed => {
    const command = (): Command => {
      switch (kind) {
        case 'cancel':
          return batch(batchId, { type: 'CancelBatch', accountId: 'acct_1', now });
        case 'close':
          return batch(batchId, { type: 'CloseWindow', now });
        case 'finalize':
          return batch(batchId, { type: 'FinalizeBatch', owner, now });
        case 'take':
          return batch(batchId, { type: 'TakeBatch', owner, leaseMs: 100_000, now });
        default:
          return batch(batchId, { type: 'EndBatch', owner, completed: 0, failed: 0, now });
      }
    };
    return { position, command: command() };
  });

/**
 * The lines' lives and some of their batches' steps, interleaved in the log, cut into writes: a line's changes land
 * in one write or spread over several.
 */
const writes: fc.Arbitrary<Command[][]> = fc
  .record({
    lives: fc.tuple(...batchIds.flatMap((batchId) => [1, 2, 3].map((n) => lineLife(batchId, n)))),
    batchSteps: fc.array(batchCommand, { maxLength: 8 }),
    cuts: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 40, maxLength: 40 }),
  })
  .map(({ lives, batchSteps, cuts }) => {
    const commands = [...lives.flat(), ...batchSteps]
      .sort((x, y) => x.position - y.position)
      .map(({ command }) => command);
    const groups: Command[][] = [];
    for (let i = 0, c = 0; i < commands.length; c++) {
      const size = cuts[c % cuts.length] as number;
      groups.push(commands.slice(i, i + size));
      i += size;
    }
    return groups;
  });

describe('A batch’s counts rebuilt by replay --verify', () => {
  it('are the counts the store kept, whatever its lines did and however their changes were grouped into writes', async () => {
    await fc.assert(
      fc.asyncProperty(writes, async (groups) => {
        const dir = tempDataDir('airs-batch-lines');
        const store = openLmdbStore(dir);
        try {
          await store.commit({ commands: setup });
          for (const commands of groups) await store.commit({ commands });
          store.syncReads.refresh();
          expect(verifyViews(store.databases).differences).toEqual([]);
        } finally {
          await store.close();
          rmSync(dir, { recursive: true, force: true });
        }
      }),
      { numRuns: 40 },
    );
  });
});
