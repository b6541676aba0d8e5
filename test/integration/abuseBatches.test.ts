import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BatchObject, chatLines, createBatch, isEnded } from '../support/batches.js';
import { type BystanderFigures, describeFigures, watchBystander, watchFor } from '../support/bystander.js';
import { startFakeOpenAi } from '../support/fakeOpenAi.js';
import {
  type CreatedKey,
  call,
  fileSandboxes,
  runCli,
  type Sandbox,
  type ServerProcess,
  sleep,
  startServer,
} from '../support/processes.js';

/**
 * Issue 40, findings 1 and 7 (the batch half), replayed through `airs serve` on LMDB with a real HTTP client, scaled
 * to seconds, while a bystander account submits and asks `/healthz` beside it (its figures are printed; the bench,
 * `npm run bench -- --only=abuse`, holds the floors). Free accounts send:
 * - batches whose second line is 4 MB nested 2,000,000 levels deep (before: validation overflowed the stack at every
 *   try, a stack in the log every second, for the whole 24 h window);
 * - a batch whose upstream answers 8 MiB a line (before: its output file was built 64 answers into one string; 11
 *   such lines made `RangeError: Invalid string length`, and finalizing retried forever);
 * and the operator cancels a batch that is finalizing, its server gone (before: `airs batches cancel` exited 1, "it
 * is finalizing", and nobody could end it).
 */

const newBox = fileSandboxes();
let server: ServerProcess;

/** A JSONL line of the chat endpoint whose tools' parameters are `levels` arrays deep (4 MB at 2,000,000). */
const deepLine = (levels: number) =>
  `{"custom_id":"deep","method":"POST","url":"/v1/chat/completions","body":{"model":"echo","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","x":${'['.repeat(levels)}${']'.repeat(levels)}}}}]}}`;

/** Uploads JSONL text as a batch input file (multipart, as the SDKs send it); its id. */
const uploadText = async (url: string, key: string, text: string): Promise<string> => {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([text]), 'lines.jsonl');
  const answer = await fetch(`${url}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  }).catch((error: unknown) => {
    throw new Error(`upload failed: ${String(error)}; the server's log ends: ${server.stderr().slice(-2_000)}`);
  });
  const body = (await answer.json()) as { id: string };
  if (answer.status !== 200) throw new Error(`upload answered ${answer.status}: ${JSON.stringify(body)}`);
  return body.id;
};

/** The CLI's commands wait this long at most: a machine shared by many test runs may be slow to start one. */
const cliTimeoutMs = 120_000;

/** An account on `plan` with one key, through the CLI. */
const accountWithKey = async (box: Sandbox, email: string, plan: string) => {
  const json = async <T>(args: string[]): Promise<T> => {
    const result = await runCli(box, [...args, '--json'], { timeoutMs: cliTimeoutMs });
    if (result.code !== 0) throw new Error(`airs ${args.join(' ')} exited ${result.code}: ${result.stderr}`);
    return JSON.parse(result.stdout) as T;
  };
  const account = await json<{ id: string }>(['accounts', 'create', '--email', email, '--plan', plan]);
  const key = await json<CreatedKey>(['keys', 'create', '--account', account.id]);
  return { accountId: account.id, key: key.key };
};

/**
 * A GET that tries again when a kept-alive connection was closed under it (the server closes idle ones), and after a
 * `429` once its `Retry-After` has passed, as a client keeping to its plan's poll budget does.
 */
const getJson = async (url: string, key: string, path: string): Promise<Record<string, unknown>> => {
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = await call(url, 'GET', path, key);
      if (answer.status !== 429) return answer.body;
      await sleep(Number(answer.headers.get('retry-after') ?? 1) * 1_000);
    } catch (error) {
      if (attempt >= 3) throw error;
      await sleep(100);
    }
  }
};

type FullBatch = BatchObject & {
  errors: { data: { code: string; line: number | null; message: string; param: string | null }[] } | null;
  cancelled_at: number | null;
  failed_at: number | null;
};

const batchOf = async (url: string, key: string, batchId: string) =>
  (await getJson(url, key, `/v1/batches/${batchId}`)) as unknown as FullBatch;

/** Polls the batch until `done` says so (or `timeoutMs` passes: an error naming its status), every `everyMs`. */
const batchUntil = async (
  key: string,
  batchId: string,
  done: (batch: FullBatch) => boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<FullBatch> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await batchOf(server.url, key, batchId);
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${batchId} is still ${batch.status} after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
};

/**
 * The lines of a file's content, read as a stream a line at a time (an output line may be 48 MB: the whole file is
 * more than one string may hold), each handed to `each` as bytes.
 */
const eachLineOf = async (url: string, key: string, fileId: string, each: (line: Buffer) => void) => {
  const answer = await fetch(`${url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });
  expect(answer.status).toBe(200);
  let pending: Buffer[] = [];
  for await (const chunk of answer.body as unknown as AsyncIterable<Uint8Array>) {
    let bytes = Buffer.from(chunk);
    for (let end = bytes.indexOf(0x0a); end !== -1; end = bytes.indexOf(0x0a)) {
      each(Buffer.concat([...pending, bytes.subarray(0, end)]));
      pending = [];
      bytes = bytes.subarray(end + 1);
    }
    if (bytes.length > 0) pending.push(bytes);
  }
  expect(pending).toEqual([]);
};

describe('batches under attack (issue 40): every batch ends, whatever its lines and answers, and the operator can end one finalizing', () => {
  let box: ReturnType<typeof newBox>;
  let upstream: Awaited<ReturnType<typeof startFakeOpenAi>>;
  /** The bystander (enterprise: its submits are never its own plan's limit), and the free accounts that attack. */
  const keys = { bystander: '', deep: [] as string[], flood: '', finalizing: '' };
  let quiet: BystanderFigures;
  /** Lines of the server's log, counted as they come (its `stderr()` keeps only the last 20,000 characters). */
  const logged = { lines: 0, stacks: 0, overflows: 0, workFailed: 0 };
  const watch = () => watchBystander({ url: server.url, key: keys.bystander, pid: server.child.pid as number });

  beforeAll(async () => {
    upstream = await startFakeOpenAi();
    box = newBox('abuse-batches');
    box.writeConfig({
      models: [
        { id: 'echo', provider: 'echo' },
        // A misbehaving upstream, of any size of answer (another part of issue 40 bounds it: nothing here relies on it).
        { id: 'flood', provider: 'openai', baseUrl: upstream.baseUrl, upstreamModel: 'flood', maxRetries: 0 },
      ],
    });
    keys.bystander = (await accountWithKey(box, 'bystander@example.com', 'enterprise')).key;
    for (const n of [1, 2, 3]) keys.deep.push((await accountWithKey(box, `deep${n}@example.com`, 'free')).key);
    keys.flood = (await accountWithKey(box, 'flood@example.com', 'free')).key;
    // Its batch is looked at every 10 ms, beyond the free plan's poll budget (10 a second).
    keys.finalizing = (await accountWithKey(box, 'finalizing@example.com', 'scale')).key;
    server = await startServer(box, { timeoutMs: cliTimeoutMs });
    server.child.stderr?.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      logged.lines += text.split('\n').length - 1;
      logged.stacks += text.match(/"stack":/g)?.length ?? 0;
      logged.overflows += text.match(/Maximum call stack size exceeded|Invalid string length/g)?.length ?? 0;
      logged.workFailed += text.match(/batch work failed/g)?.length ?? 0;
    });
    quiet = await watchFor({ url: server.url, key: keys.bystander, pid: server.child.pid as number }, 3_000);
    console.log(describeFigures('abuseBatches: quiet server', quiet));
  }, 900_000);

  afterAll(async () => {
    await server?.stop();
    await upstream?.close();
  });

  it('fails batches whose line is nested 2,000,000 levels deep at validation, naming maxJsonDepth, with nothing in the log', async () => {
    const text = `${JSON.stringify(chatLines('echo', ['first'])[0])}\n${deepLine(1_999_950)}\n`;
    expect(text.length).toBeGreaterThan(4_000_000);
    const watching = watch();
    const batches: { key: string; id: string }[] = [];
    for (const key of keys.deep) {
      const fileId = await uploadText(server.url, key, text);
      // Two batches an account, as the free plan allows.
      for (let i = 0; i < 2; i++) batches.push({ key, id: (await createBatch(server.url, key, fileId)).id });
    }
    for (const { key, id } of batches) {
      const batch = await batchUntil(key, id, isEnded, 120_000);
      expect(batch.status).toBe('failed');
      expect(batch.errors?.data).toEqual([
        {
          code: 'invalid_request',
          line: 2,
          message: 'the JSON body is nested deeper than 64 levels, the limit (maxJsonDepth)',
          param: 'body',
        },
      ]);
      expect(batch.request_counts).toEqual({ total: 0, completed: 0, failed: 0 });
    }
    const figures = await watching.stop();
    console.log(describeFigures('abuseBatches: 6 batches with a line 2,000,000 levels deep', figures));
    expect(figures.refused).toEqual({});
    // Refused from its bytes, before anything was parsed: no stack overflowed, nothing failed, nothing was logged.
    expect(logged).toMatchObject({ stacks: 0, overflows: 0, workFailed: 0 });
  }, 300_000);

  it('ends a batch whose upstream answers 8 MiB a line, its output written a line at a time, memory bounded', async () => {
    const lines = 2;
    const answerChars = 8 * 1024 * 1024;
    // Answers of 8 MiB that JSON writes six times over (48 MiB a line); test/app/batchOutputs.test.ts holds the bounds
    // on what is read and written at once (11 such answers, 64 to a piece, were more than one string may hold).
    const prompts = Array.from({ length: lines }, () => `flood ${answerChars}`);
    const input = chatLines('flood', prompts)
      .map((line) => JSON.stringify(line))
      .join('\n');
    const fileId = await uploadText(server.url, keys.flood, `${input}\n`);
    const watching = watch();
    const { id } = await createBatch(server.url, keys.flood, fileId);
    const ended = await batchUntil(keys.flood, id, isEnded, 600_000, 500);
    const figures = await watching.stop();
    console.log(describeFigures('abuseBatches: a batch of 2 answers of 8 MiB', figures));
    console.log(`abuseBatches: the 8 MiB batch ended ${ended.status}, ${JSON.stringify(ended.request_counts)}`);
    // Ended, every line in one of its files: completed (its answer in the output), or failed as the upstream's fault
    // where answers are bounded (models[].maxAnswerBytes).
    expect(['completed', 'failed']).toContain(ended.status);
    expect(ended.request_counts.total).toBe(lines);
    expect(ended.request_counts.completed + ended.request_counts.failed).toBe(lines);
    let outputLines = 0;
    if (ended.output_file_id !== null)
      await eachLineOf(server.url, keys.flood, ended.output_file_id, (bytes) => {
        outputLines++;
        const line = JSON.parse(bytes.toString('utf8')) as {
          response: { body: { choices: { message: { content: string } }[] } };
        };
        expect(line.response.body.choices[0]?.message.content).toBe('\u0001'.repeat(answerChars));
      });
    expect(outputLines).toBe(ended.request_counts.completed);
    // Its upstream's answers (48 MB of JSON each, four at once) and one line's pieces, not its answers whole.
    expect(figures.rssPeakMiB).toBeLessThan(1_536);
    expect(logged).toMatchObject({ stacks: 0, overflows: 0, workFailed: 0 });
  }, 900_000);

  it('lets the operator cancel a finalizing batch whose server died: it ends cancelled without files, and stays so', async () => {
    // Answers of some 8 KB (echo answers the prompt): writing the 16 MB output file takes a moment.
    const lines = 2_000;
    const prompts = Array.from({ length: lines }, (_, i) => `line ${i} ${'z'.repeat(8_000)}`);
    const input = chatLines('echo', prompts)
      .map((line) => JSON.stringify(line))
      .join('\n');
    const fileId = await uploadText(server.url, keys.finalizing, `${input}\n`);
    const { id } = await createBatch(server.url, keys.finalizing, fileId);
    // Looked at every 10 ms: writing the files takes longer than that. Killed mid-finalize: nobody finishes it now.
    const seen = await batchUntil(
      keys.finalizing,
      id,
      (batch) => !['validating', 'in_progress'].includes(batch.status),
      600_000,
      10,
    );
    await server.stop('SIGKILL');
    expect(seen.status).toBe('finalizing');
    const cancel = await runCli(box, ['batches', 'cancel', id], { timeoutMs: cliTimeoutMs });
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toMatch(
      new RegExp(`^batch ${id} is cancelled \\(it was finalizing, ${lines} of ${lines} lines done`),
    );
    // A server started again finds nothing to do for it: cancelled, no file, every line counted.
    server = await startServer(box, { timeoutMs: cliTimeoutMs });
    await sleep(3_000);
    const batch = await batchOf(server.url, keys.finalizing, id);
    expect(batch).toMatchObject({
      status: 'cancelled',
      output_file_id: null,
      error_file_id: null,
      request_counts: { total: lines, completed: lines, failed: 0 },
    });
    expect(batch.cancelled_at).not.toBeNull();
    const files = (await getJson(server.url, keys.finalizing, '/v1/files?purpose=batch_output')) as { data: unknown[] };
    expect(files.data).toEqual([]);
    // The log shows the cancel (replay --batch).
    const replayed = await runCli(box, ['replay', '--batch', id, '--json'], { timeoutMs: cliTimeoutMs });
    expect(replayed.code, replayed.stderr).toBe(0);
    const events = (JSON.parse(replayed.stdout) as { events: { type: string }[] }).events;
    expect(events.map((event) => event.type).slice(-1)).toEqual(['BatchFinalizingCancelled']);
  }, 900_000);

  it('keeps a clean store: replay --verify rebuilds every view from the log, the new events too', async () => {
    await server.stop();
    const verify = await runCli(box, ['replay', '--verify'], { timeoutMs: cliTimeoutMs });
    expect(verify.code, verify.stderr).toBe(0);
    console.log(
      `abuseBatches: quiet submit p99 ${quiet.submitP99Ms.toFixed(1)} ms; the server logged ${logged.lines} lines, ${logged.stacks} stacks`,
    );
  }, 300_000);
});
