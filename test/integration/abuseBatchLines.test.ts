import { createReadStream, createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { createBatch, linesOfFile, residentBytes, untilEnded } from '../support/batchServer.js';
import { describeFigures, fileBytes, rssMiB, watchBystander, watchFor } from '../support/bystander.js';
import { createAccountWithKey, fileSandboxes, type ServerProcess, sleep, startServer } from '../support/processes.js';

/**
 * Issue 40, finding 4: free accounts run batches of large prompts, every free-plan limit respected, while another
 * account submits to `/v1/ai` and `/healthz` is asked beside it (test/support/bystander.ts), through `airs serve` on
 * LMDB and the official `openai` SDK. Scaled to seconds from the finding (2 batches per account of 190 lines of about
 * 990 KB): smaller quotas, fewer lines, the same shape.
 *
 * Before (the code this was branched from): each line's prompt was copied into its request and handed to the
 * committer 1,000 lines at a time, so the lines of a few batches filled the committer's queue (256 MiB by its count,
 * 3 bytes a character) and the bystander's submits were answered `503`; the lines' answers and the output files
 * counted in no account's storage, so `airs.mdb` grew past the accounts' quotas. Now a line's request keeps where the
 * line lies in its input file (read when its attempt starts), a batch queues its lines a write at a time within a
 * budget, and what a batch makes the store keep counts in its account's stored bytes: lines wait for room.
 */

const newBox = fileSandboxes();
const mib = 1024 * 1024;
/** What a batch's line costs the store beside its texts, at most (its record, its events, its output line's frame). */
const bookkeeping = 8 * 1024;

/** A chat line of `promptChars` characters of prompt (ASCII: a character is a byte). */
const lineOf = (customId: string, promptChars: number) =>
  `${JSON.stringify({
    custom_id: customId,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'echo', messages: [{ role: 'user', content: `${customId} ${'x'.repeat(promptChars)}` }] },
  })}\n`;

/** Writes a JSONL file of `lines` lines of `promptChars` each, a line at a time, and returns its path. */
const writeLines = async (dir: string, name: string, lines: number, promptChars: number) => {
  const path = join(dir, `${name}.jsonl`);
  const out = createWriteStream(path);
  for (let i = 0; i < lines; i++)
    if (!out.write(lineOf(`${name}-${i}`, promptChars)))
      await new Promise<void>((resolve) => out.once('drain', () => resolve()));
  out.end();
  await finished(out);
  return path;
};

/**
 * The largest anonymous resident set of the process (RssAnon: heap, buffers, native allocations) while sampled, in MiB.
 * VmRSS also counts the pages of LMDB's memory map the process touched (the page cache, which grows with whatever is
 * read: here hundreds of MB of files and answers), as batchMemory.test.ts explains.
 */
const sampleAnon = (pid: number) => {
  let peak = 0;
  const sample = () => {
    try {
      peak = Math.max(peak, residentBytes(pid).anon / mib);
    } catch {
      // The process ended.
    }
  };
  sample();
  const timer = setInterval(sample, 100);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
};

const clientOf = (server: ServerProcess, key: string) =>
  new OpenAI({ baseURL: `${server.url}/v1`, apiKey: key, maxRetries: 2, timeout: 120_000 });

type Attack = {
  /** Free accounts attacking, each with two batches of `lines` lines of `promptChars` characters. */
  readonly accounts: number;
  readonly lines: number;
  readonly promptChars: number;
  /** Each free account's bound of stored bytes (plans.free.maxFileStorageBytes). */
  readonly quota: number;
  /** A batch's window (batches.windowSeconds): what bounds the wait of a batch whose account has no room left. */
  readonly windowSeconds: number;
};

/** The server, its accounts, and the attackers' batches (each account's two input files uploaded, none created). */
const prepare = async (label: string, attack: Attack) => {
  const box = newBox(label);
  const maxBodyBytes = attack.promptChars + 64 * 1024;
  box.writeConfig({
    models: [{ id: 'echo', provider: 'echo' }],
    maxPromptChars: attack.promptChars + 1_000,
    maxPromptBytes: attack.promptChars + 4_096,
    maxBodyBytes,
    plans: { free: { maxFileStorageBytes: attack.quota } },
    batches: { windowSeconds: attack.windowSeconds, maxFileBytes: 256 * mib },
  });
  const bystander = await createAccountWithKey(box, `${label}-bystander@example.com`, 'enterprise');
  const attackers = [];
  for (let a = 0; a < attack.accounts; a++)
    attackers.push(await createAccountWithKey(box, `${label}-attacker-${a}@example.com`, 'free'));
  const server = await startServer(box, { timeoutMs: 60_000 });
  const mdb = join(box.dataDir, 'airs.mdb');
  const mdbAtStart = fileBytes(mdb);
  // The input files, uploaded before the attack is watched (uploads are findings of their own).
  const inputs: { client: OpenAI; fileId: string }[] = [];
  for (const [a, attacker] of attackers.entries()) {
    const client = clientOf(server, attacker.key);
    for (let b = 0; b < 2; b++) {
      const path = await writeLines(box.dir, `a${a}b${b}`, attack.lines, attack.promptChars);
      const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
      inputs.push({ client, fileId: file.id });
    }
  }
  const pid = server.child.pid as number;
  return { box, server, bystander, inputs, mdb, mdbAtStart, pid, maxBodyBytes };
};

describe('free accounts running batches of large prompts, with a bystander account measured', {
  timeout: 600_000,
}, () => {
  it("never refuses the bystander's submits, keeps the server's memory while lines run and airs.mdb within bounds, and completes every batch", async () => {
    // The finding's shape, scaled: three free accounts, two batches each of 200 lines of 100 KB prompts: 120 MB of
    // prompts in all, which the committer's queue (256 MiB by its count, 3 bytes a character) cannot take at once.
    // Each account's quota holds its inputs, its answers (kept, and the room of its output files) and their room.
    const attack: Attack = { accounts: 3, lines: 200, promptChars: 100_000, quota: 160 * mib, windowSeconds: 600 };
    const { server, bystander, inputs, mdb, mdbAtStart, pid } = await prepare('abuse-lines', attack);
    const options = { url: server.url, key: bystander.key, pid };
    const quietAnon = sampleAnon(pid);
    const quiet = await watchFor(options, 3_000);
    const quietAnonMiB = quietAnon.stop();
    console.log(describeFigures('quiet', quiet), `; anonymous RSS peak ${quietAnonMiB.toFixed(0)} MiB`);

    const anon = sampleAnon(pid);
    const whileLinesRun = sampleAnon(pid);
    const watch = watchBystander(options);
    const batches = await Promise.all(inputs.map(({ client, fileId }) => createBatch(client, fileId)));
    const retrieve = () => Promise.all(batches.map((batch, i) => inputs[i]!.client.batches.retrieve(batch.id)));
    // Lines run until a batch has all its lines ended: it then writes its output file, the other part of the memory,
    // whose bound is the output's (64 answers at a time: outputFiles.ts). The batches go on in step (accounts in turn).
    const deadline = Date.now() + 480_000;
    for (;;) {
      const now = await retrieve();
      if (now.some((batch) => batch.status !== 'validating' && batch.status !== 'in_progress')) break;
      if (Date.now() > deadline)
        throw new Error(
          `batches still running: ${now.map((batch) => batch.status).join(', ')}; ${server.stderr().slice(-2_000)}`,
        );
      await sleep(100);
    }
    const linesAnonMiB = whileLinesRun.stop();
    const whileLines = await watch.stop();
    const outputsWatch = watchBystander(options);
    const ended = await Promise.all(batches.map((batch, i) => untilEnded(inputs[i]!.client, batch.id, 240_000)));
    const whileOutputs = await outputsWatch.stop();
    const anonMiB = anon.stop();
    const grown = fileBytes(mdb) - mdbAtStart;
    console.log(
      describeFigures('while the lines ran', whileLines),
      `; anonymous RSS peak ${linesAnonMiB.toFixed(0)} MiB`,
    );
    console.log(
      describeFigures('while the output files were written', whileOutputs),
      `; anonymous RSS peak ${anonMiB.toFixed(0)} MiB`,
    );
    console.log(
      `airs.mdb grew by ${(grown / mib).toFixed(1)} MiB (the attackers' quotas: ${((attack.accounts * attack.quota) / mib).toFixed(0)} MiB); RSS now ${rssMiB(pid).toFixed(0)} MiB`,
    );

    expect(ended.map((batch) => [batch.status, batch.request_counts])).toEqual(
      ended.map(() => ['completed', { total: attack.lines, completed: attack.lines, failed: 0 }]),
    );
    // Every answer is its line's prompt (read from the input file when its attempt started).
    const output = await linesOfFile(inputs[0]!.client, ended[0]?.output_file_id);
    expect(output).toHaveLength(attack.lines);
    for (const line of output)
      expect(line.response.body.choices[0].message.content).toBe(`${line.custom_id} ${'x'.repeat(attack.promptChars)}`);
    expect(whileLines.refused['503']).toBeUndefined();
    expect(whileOutputs.refused['503']).toBeUndefined();
    // Bound while lines run: the quiet server's anonymous resident set and 250 MiB. A running line holds its line and
    // its answer a few times over (read, parsed, checked, recorded): 12 lines at once here (the free plan's 4 per
    // account), and each batch parses one line at a time to queue it; none holds a prompt while it waits. Measured
    // 229 MiB from a quiet 86 MiB; the code before held every queued line's prompt: 653 MiB from 86 MiB (and answered
    // two of the bystander's submits 503).
    expect(linesAnonMiB).toBeLessThan(quietAnonMiB + 250);
    expect(grown).toBeLessThanOrEqual(attack.accounts * attack.quota);
  });

  it("keeps airs.mdb within the attackers' quotas when their batches' answers would pass them: lines wait for room, and each batch ends at its window with what it answered", async () => {
    // Two free accounts whose inputs take most of their quota: their answers (kept, and written again into the output
    // files) would take three times that.
    const attack: Attack = { accounts: 2, lines: 12, promptChars: 200_000, quota: 7 * mib, windowSeconds: 12 };
    const { server, bystander, inputs, mdb, mdbAtStart, pid } = await prepare('abuse-lines-quota', attack);
    const watch = watchBystander({ url: server.url, key: bystander.key, pid });
    const batches = await Promise.all(inputs.map(({ client, fileId }) => createBatch(client, fileId)));
    const ended = await Promise.all(batches.map((batch, i) => untilEnded(inputs[i]!.client, batch.id, 120_000)));
    const figures = await watch.stop();
    const grown = fileBytes(mdb) - mdbAtStart;
    console.log(describeFigures('during the batches', figures));
    console.log(
      `airs.mdb grew by ${(grown / mib).toFixed(2)} MiB (the attackers' quotas: ${((attack.accounts * attack.quota) / mib).toFixed(0)} MiB); ` +
        `batches: ${ended.map((batch) => `${batch.status} ${batch.request_counts?.completed}/${batch.request_counts?.total}`).join(', ')}`,
    );
    // Every batch ends by itself; each line is in exactly one of its two files: answered, or never run.
    for (const [i, batch] of ended.entries()) {
      expect(['completed', 'expired']).toContain(batch.status);
      const { client } = inputs[i]!;
      const answered = await linesOfFile(client, batch.output_file_id);
      const notRun = await linesOfFile(client, batch.error_file_id);
      expect(answered.length + notRun.length).toBe(attack.lines);
      for (const line of notRun) expect(line.error.code).toBe('batch_expired');
    }
    // Some lines waited for room: not every line of every batch was answered.
    expect(ended.some((batch) => batch.status === 'expired')).toBe(true);
    // Within the quotas, but for what each line costs the store whatever its size (its request's record, its events in
    // the log, its line in the output or error file: a few KB), which its plan bounds (batches.maxLines) and no quota
    // counts. The code before grew by 30.5 MiB here.
    expect(grown).toBeLessThanOrEqual(
      attack.accounts * attack.quota + 2 * attack.accounts * attack.lines * bookkeeping,
    );
  });
});
