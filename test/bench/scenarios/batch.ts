/**
 * Batches (contract 16) against the same requests sent one by one, in one run.
 *
 * - The batch: a JSONL file of N `echo` chat completions is uploaded (`POST /v1/files`, a multipart body streamed from
 *   the disk), a batch is made of it (`POST /v1/batches`), `GET /v1/batches/{id}` is read every `pollMs` until the
 *   batch is final, and its output file is downloaded (streamed to the disk) and checked: N lines, each custom_id once,
 *   each answer the prompt of its line. Timed from the start of the upload to the batch's `completed` status, and to
 *   the end of the download; the reads of the batch give the phases (validation, lines, finalizing) and the rate of
 *   its lines at the start and at the end (`request_counts.completed` over time).
 * - The baseline: the same N requests, `POST /v1/chat/completions` (a waiting create: it answers once the completion is
 *   done) from `clients` concurrent clients (autocannon connections), against a fresh airs server with the same config.
 * - The same batch on PostgreSQL (a throwaway cluster, as the pg scenario starts it), beside the LMDB figures.
 *
 * Each server gets an untimed warm-up first (a batch of `warmup` lines, or `warmup` requests one by one), then the
 * bench waits until it is idle. The bench only talks HTTP to `airs serve` on 127.0.0.1; it runs on the load CPUs, the
 * servers (and PostgreSQL) on the server CPUs.
 */
import { randomUUID } from 'node:crypto';
import { closeSync, createReadStream, createWriteStream, mkdirSync, openSync, statSync, writeSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { basename, join } from 'node:path';
import { createInterface } from 'node:readline';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { childrenOf } from '../../support/postgres.js';
import { authHeaders, benchConfig, call, createAccountWithKey, type Sandbox, sandbox, startAirs } from '../airs.js';
import { type Context, profileFlags, type Row, type ScenarioResult } from '../context.js';
import { type LoadResult, type LoadSpec, runLoad } from '../load.js';
import { type BenchCluster, startBenchCluster } from '../postgres.js';
import { type Memory, memoryOf, waitForIdle } from '../procfs.js';
import { ratio, round } from '../stats.js';
import { onDatabase } from './pg.js';

/** The floor: the batch at least as fast as the same requests one by one (the goal is 2 x). */
const minRatio = 1;
const goalRatio = 2;
/** While the batch is validating it is read this often, so that the end of validation is seen within a few ms. */
const validatingPollMs = 10;
const endpoint = '/v1/chat/completions';
const finalStatuses = ['completed', 'failed', 'expired', 'cancelled'];
const mb = (bytes: number) => bytes / 1_000_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The config of every server of the scenario: the bench's, with room for the batch. */
const batchConfig = (lines: number, fileBytes: number) => ({
  ...benchConfig,
  batches: {
    maxLines: Math.max(lines, 50_000),
    maxFileBytes: Math.max(200 * 1024 * 1024, 2 * fileBytes),
  },
});

type InputFile = { readonly path: string; readonly prefix: string; readonly lines: number; readonly bytes: number };

/** Line `i` of a batch file: an echo chat completion whose answer is `prompt <i>`. */
const chatLine = (prefix: string, i: number) =>
  JSON.stringify({
    custom_id: `${prefix}${i}`,
    method: 'POST',
    url: endpoint,
    body: { model: 'echo', messages: [{ role: 'user', content: `prompt ${i}` }] },
  });

/** Writes a batch file of `lines` lines, 10,000 at a time. */
const writeInput = (path: string, prefix: string, lines: number): InputFile => {
  const fd = openSync(path, 'w');
  try {
    for (let from = 0; from < lines; from += 10_000) {
      const chunk: string[] = [];
      for (let i = from; i < Math.min(lines, from + 10_000); i++) chunk.push(chatLine(prefix, i));
      writeSync(fd, `${chunk.join('\n')}\n`);
    }
  } finally {
    closeSync(fd);
  }
  return { path, prefix, lines, bytes: statSync(path).size };
};

type Answer = { readonly status: number; readonly body: Record<string, unknown> };

/**
 * `POST /v1/files` with `purpose=batch` and the file, as one multipart body whose file part is piped from the disk as
 * the socket takes it (never whole in memory on either side).
 */
const upload = (url: string, key: string, file: InputFile, timeoutMs: number): Promise<Answer> => {
  const boundary = `----airs-bench-${randomUUID()}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${basename(file.path)}"\r\n` +
      'Content-Type: application/jsonl\r\n\r\n',
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise<Answer>((resolve, reject) => {
    const request = httpRequest(
      new URL('/v1/files', url),
      {
        method: 'POST',
        headers: {
          ...authHeaders(key),
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(head.length + file.bytes + tail.length),
        },
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('error', reject);
        response.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: Record<string, unknown>;
          try {
            body = JSON.parse(text) as Record<string, unknown>;
          } catch {
            body = { text: text.slice(0, 2000) };
          }
          resolve({ status: response.statusCode ?? 0, body });
        });
      },
    );
    const timer = setTimeout(() => request.destroy(new Error(`upload: no answer within ${timeoutMs} ms`)), timeoutMs);
    request.on('close', () => clearTimeout(timer));
    request.on('error', reject);
    request.write(head);
    const source = createReadStream(file.path);
    source.on('error', (error) => request.destroy(error));
    source.on('end', () => request.end(tail));
    source.pipe(request, { end: false });
  });
};

/** The output file, streamed to `path`; its size. */
const download = async (url: string, key: string, fileId: string, path: string, timeoutMs: number) => {
  const response = await fetch(`${url}/v1/files/${encodeURIComponent(fileId)}/content`, {
    headers: authHeaders(key),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (response.status !== 200 || response.body === null)
    throw new Error(`GET /v1/files/${fileId}/content answered ${response.status}: ${await response.text()}`);
  await pipeline(Readable.fromWeb(response.body as WebReadableStream<Uint8Array>), createWriteStream(path));
  return statSync(path).size;
};

/** Every line of the input is in the output once, answered 200 with its own prompt, and nothing else is. */
const checkOutput = async (path: string, input: InputFile) => {
  const seen = new Uint8Array(input.lines);
  let lines = 0;
  const pattern = new RegExp(`^${input.prefix}(\\d+)$`);
  for await (const text of createInterface({ input: createReadStream(path), crlfDelay: Number.POSITIVE_INFINITY })) {
    if (text === '') continue;
    lines++;
    // biome-ignore lint/suspicious/noExplicitAny: an output line is OpenAI's object, checked field by field here
    const line = JSON.parse(text) as Record<string, any>;
    const match = pattern.exec(String(line.custom_id));
    const i = match === null ? -1 : Number(match[1]);
    if (i < 0 || i >= input.lines) throw new Error(`output line ${lines}: unknown custom_id ${line.custom_id}`);
    if (seen[i] === 1) throw new Error(`output line ${lines}: custom_id ${line.custom_id} seen twice`);
    seen[i] = 1;
    const content = line.response?.body?.choices?.[0]?.message?.content;
    if (line.response?.status_code !== 200 || content !== `prompt ${i}`)
      throw new Error(`output line ${lines} (${line.custom_id}) is not the answer to its line: ${text.slice(0, 500)}`);
  }
  if (lines !== input.lines) throw new Error(`the output file has ${lines} lines, expected ${input.lines}`);
};

/** One read of the batch: when (ms after the upload began, midway between sending and the answer) and what. */
type Sample = { readonly at: number; readonly status: string; readonly completed: number; readonly failed: number };

/** The largest RSS seen of the server (its processes together), read every 50 ms until `stop`. */
const rssPeak = (pid: number, withChildren: boolean) => {
  let peak: Memory = { rssMiB: 0, anonMiB: 0, fileMiB: 0 };
  const read = () => {
    const pids = withChildren ? [pid, ...childrenOf(pid)] : [pid];
    const sum = { rssMiB: 0, anonMiB: 0, fileMiB: 0 };
    for (const one of pids) {
      const memory = memoryOf(one);
      if (memory === undefined) continue;
      sum.rssMiB += memory.rssMiB;
      sum.anonMiB += memory.anonMiB;
      sum.fileMiB += memory.fileMiB;
    }
    if (sum.rssMiB > peak.rssMiB)
      peak = { rssMiB: round(sum.rssMiB, 1), anonMiB: round(sum.anonMiB, 1), fileMiB: round(sum.fileMiB, 1) };
  };
  read();
  const first = peak;
  const timer = setInterval(read, 50);
  return {
    /** What the first read found (before the work began). */
    first,
    stop: (): Memory => {
      clearInterval(timer);
      read();
      return peak;
    },
  };
};

type Server = { readonly url: string; readonly key: string; readonly pid: number };

export type BatchRun = {
  readonly lines: number;
  readonly inputBytes: number;
  readonly outputBytes: number;
  /** Seconds from the start of the upload. */
  readonly at: {
    readonly uploaded: number;
    readonly created: number;
    readonly validated: number;
    readonly linesDone: number;
    readonly completed: number;
    readonly downloaded: number;
  };
  readonly seconds: {
    readonly upload: number;
    readonly validation: number;
    /** From the end of validation until every line had ended (queueing and running the lines). */
    readonly lines: number;
    /** From then until the batch was `completed` (output file written). */
    readonly finalizing: number;
    readonly download: number;
  };
  /** Lines over the time from the start of the upload to `completed`. */
  readonly linesPerSec: number;
  /** Lines over the time from the start of the upload to the end of the download. */
  readonly linesPerSecDownloaded: number;
  /** Lines over the lines' own phase. */
  readonly linesPerSecRunning: number;
  readonly uploadMBps: number;
  readonly validationMBps: number;
  /** The rate of completions between the reads around 0 and 10 % completed, and around 90 % and 100 %. */
  readonly firstTenth: Window;
  readonly lastTenth: Window;
  /** `in_progress_at - created_at` of the batch object (whole seconds). */
  readonly validationSecondsFromTimestamps: number | null;
  readonly rssMiB: { readonly idleBefore: Memory; readonly peak: Memory };
  readonly reads: number;
  readonly samples: readonly Sample[];
};

type Window = {
  readonly linesPerSec: number;
  readonly fromCompleted: number;
  readonly toCompleted: number;
  readonly seconds: number;
};

const windowOf = (from: Sample | undefined, to: Sample | undefined): Window => {
  if (from === undefined || to === undefined || to.at <= from.at)
    return { linesPerSec: Number.NaN, fromCompleted: Number.NaN, toCompleted: Number.NaN, seconds: Number.NaN };
  const seconds = (to.at - from.at) / 1000;
  return {
    linesPerSec: round((to.completed - from.completed) / seconds),
    fromCompleted: from.completed,
    toCompleted: to.completed,
    seconds: round(seconds, 3),
  };
};

/** Midway between the last read before the first one that satisfies `test` and that one (ms after the origin). */
const crossing = (samples: readonly Sample[], test: (sample: Sample) => boolean): number => {
  const i = samples.findIndex(test);
  if (i < 0) return Number.NaN;
  const after = samples[i] as Sample;
  const before = samples[i - 1];
  return before === undefined ? after.at : (before.at + after.at) / 2;
};

/** The index of the last read before `end` that satisfies `test` (-1: none). */
const lastBefore = (samples: readonly Sample[], end: number, test: (sample: Sample) => boolean): number => {
  for (let i = end - 1; i >= 0; i--) if (test(samples[i] as Sample)) return i;
  return -1;
};

/** Upload, create, follow to the end, download and check one batch; the figures of the run. */
const runBatch = async (context: Context, server: Server, input: InputFile, withChildren: boolean) => {
  const { batch } = context.options.sizes;
  const { url, key } = server;
  const timeoutMs = batch.timeoutSec * 1000;
  const memory = rssPeak(server.pid, withChildren);
  const idleBefore = memory.first;
  try {
    const origin = performance.now();
    const deadline = origin + timeoutMs;
    const since = () => performance.now() - origin;
    const uploaded = await upload(url, key, input, timeoutMs);
    const uploadedAt = since();
    if (uploaded.status !== 200)
      throw new Error(`POST /v1/files answered ${uploaded.status}: ${JSON.stringify(uploaded.body).slice(0, 1000)}`);
    if (uploaded.body.bytes !== input.bytes)
      throw new Error(`the uploaded file has ${uploaded.body.bytes} bytes, ${input.bytes} were sent`);
    const created = await call(url, 'POST', '/v1/batches', key, {
      input_file_id: uploaded.body.id,
      endpoint,
      completion_window: '24h',
    });
    const createdAt = since();
    if (created.status !== 200)
      throw new Error(`POST /v1/batches answered ${created.status}: ${JSON.stringify(created.body).slice(0, 1000)}`);
    const batchId = String(created.body.id);

    const samples: Sample[] = [];
    let final: Record<string, unknown>;
    for (;;) {
      const sent = performance.now();
      const read = await call(url, 'GET', `/v1/batches/${encodeURIComponent(batchId)}`, key);
      const answered = performance.now();
      if (read.status !== 200)
        throw new Error(`GET /v1/batches/${batchId} answered ${read.status}: ${JSON.stringify(read.body)}`);
      const counts = read.body.request_counts as { completed: number; failed: number };
      const status = String(read.body.status);
      samples.push({ at: (sent + answered) / 2 - origin, status, completed: counts.completed, failed: counts.failed });
      if (finalStatuses.includes(status)) {
        final = read.body;
        break;
      }
      if (answered > deadline)
        throw new Error(
          `batch ${batchId} still ${status} (${counts.completed} of ${input.lines} completed) after ${batch.timeoutSec} s`,
        );
      await sleep(Math.max(0, sent + (status === 'validating' ? validatingPollMs : batch.pollMs) - answered));
    }
    const counts = final.request_counts as { total: number; completed: number; failed: number };
    if (
      final.status !== 'completed' ||
      counts.total !== input.lines ||
      counts.completed !== input.lines ||
      counts.failed !== 0 ||
      final.error_file_id !== null ||
      typeof final.output_file_id !== 'string'
    )
      throw new Error(`batch ${batchId} ended ${JSON.stringify({ ...final, errors: undefined }).slice(0, 1500)}`);

    const downloadStarted = since();
    const outputPath = `${input.path}.${batchId}.output.jsonl`;
    const outputBytes = await download(
      url,
      key,
      final.output_file_id,
      outputPath,
      Math.max(1, Math.round(deadline - performance.now())),
    );
    const downloadedAt = since();
    const peak = memory.stop();
    await checkOutput(outputPath, input);

    const validatedAt = crossing(samples, (s) => s.status !== 'validating');
    const linesDoneAt = crossing(samples, (s) => s.completed + s.failed >= input.lines);
    const completedAt = crossing(samples, (s) => s.status === 'completed');
    const firstAtTenth = samples.findIndex((s) => s.completed >= input.lines * 0.1);
    const lastStart = lastBefore(samples, firstAtTenth, (s) => s.completed === 0);
    const allDone = samples.findIndex((s) => s.completed >= input.lines);
    const beforeLastTenth = lastBefore(samples, allDone, (s) => s.completed <= input.lines * 0.9);
    const seconds = (ms: number) => round(ms / 1000, 3);
    const createdAtSec = final.created_at as number;
    const inProgressAtSec = final.in_progress_at as number | null;
    return {
      lines: input.lines,
      inputBytes: input.bytes,
      outputBytes,
      at: {
        uploaded: seconds(uploadedAt),
        created: seconds(createdAt),
        validated: seconds(validatedAt),
        linesDone: seconds(linesDoneAt),
        completed: seconds(completedAt),
        downloaded: seconds(downloadedAt),
      },
      seconds: {
        upload: seconds(uploadedAt),
        validation: seconds(validatedAt - createdAt),
        lines: seconds(linesDoneAt - validatedAt),
        finalizing: seconds(completedAt - linesDoneAt),
        download: seconds(downloadedAt - downloadStarted),
      },
      linesPerSec: round(input.lines / (completedAt / 1000)),
      linesPerSecDownloaded: round(input.lines / (downloadedAt / 1000)),
      linesPerSecRunning: round(input.lines / ((linesDoneAt - validatedAt) / 1000)),
      uploadMBps: round(mb(input.bytes) / (uploadedAt / 1000), 1),
      validationMBps: round(mb(input.bytes) / ((validatedAt - createdAt) / 1000), 1),
      firstTenth: windowOf(samples[lastStart], samples[firstAtTenth]),
      lastTenth: windowOf(samples[beforeLastTenth], samples[allDone]),
      validationSecondsFromTimestamps: inProgressAtSec === null ? null : inProgressAtSec - createdAtSec,
      rssMiB: { idleBefore, peak },
      reads: samples.length,
      samples: samples.map((s) => ({ ...s, at: round(s.at, 1) })),
    } satisfies BatchRun;
  } finally {
    memory.stop();
  }
};

/** An account and a key, then `airs serve` on `box`, given to `run`; stopped after. Errors carry the server's output. */
const withServer = async <T>(
  context: Context,
  box: Sandbox,
  label: string,
  run: (server: Server) => Promise<T>,
): Promise<T> => {
  const credentials = await createAccountWithKey(box);
  const airs = await startAirs(box, {
    cpus: context.cpus.server,
    nodeArgs: profileFlags(context, label),
    processes: context.options.processes,
  });
  try {
    return await run({ url: airs.url, key: credentials.key, pid: airs.child.pid });
  } catch (error) {
    const output = `${airs.child.stdout()}\n${airs.child.stderr()}`;
    const message = error instanceof Error ? error.message : String(error);
    const notYet = /batches and files are not stored on PostgreSQL yet/.exec(output);
    if (notYet !== null) throw new Error(`the server says "${notYet[0]}" (${message.slice(0, 200)})`);
    // What the server said last (its errors are JSON lines on stderr), and whether it is still there.
    const exit = airs.child.running() ? 'still running' : `exited (${JSON.stringify(await airs.child.exited)})`;
    throw new Error(`${message}; the server ${exit}, its output ends: ${output.trim().slice(-1500)}`);
  } finally {
    await airs.child.stop('SIGTERM', 20_000);
  }
};

/** The warm-up batch, idle, then the timed batch. */
const timedBatch = async (context: Context, server: Server, warmup: InputFile, input: InputFile, label: string) => {
  const withChildren = context.options.processes > 1;
  context.log(`  ${label}: warm-up batch of ${warmup.lines} lines`);
  await runBatch(context, server, warmup, withChildren);
  const idle = await waitForIdle(server.pid, { timeoutMs: 30_000 });
  if (!idle.idle) context.log(`  ${label}: server still busy after ${idle.waitedMs} ms; measuring anyway`);
  context.log(`  ${label}: batch of ${input.lines} lines (${mb(input.bytes).toFixed(1)} MB)`);
  const run = await runBatch(context, server, input, withChildren);
  context.log(
    `  ${label}: completed ${run.at.completed} s after the upload began (${run.linesPerSec} lines/s; downloaded at ${run.at.downloaded} s); first 10 % ${run.firstTenth.linesPerSec}/s, last 10 % ${run.lastTenth.linesPerSec}/s`,
  );
  return run;
};

export type OneByOneRun = {
  readonly requests: number;
  readonly seconds: number;
  readonly requestsPerSec: number;
  readonly load: LoadResult;
  readonly rssMiB: { readonly idleBefore: Memory; readonly peak: Memory };
};

/** The same requests one by one: `POST /v1/chat/completions` (waiting) from `clients` clients, after a warm-up. */
const oneByOne = async (context: Context, server: Server, label: string): Promise<OneByOneRun> => {
  const { batch } = context.options.sizes;
  const probe = await call(server.url, 'POST', endpoint, server.key, {
    model: 'echo',
    messages: [{ role: 'user', content: 'prompt probe' }],
  });
  const choices = probe.body.choices as { message?: { content?: string } }[] | undefined;
  if (probe.status !== 200 || choices?.[0]?.message?.content !== 'prompt probe')
    throw new Error(`POST ${endpoint} answered ${probe.status}: ${JSON.stringify(probe.body).slice(0, 1000)}`);
  const spec = (amount: number, prompt: string): LoadSpec => ({
    url: server.url,
    method: 'POST',
    path: endpoint,
    headers: authHeaders(server.key, true),
    numberedBody: JSON.stringify({ model: 'echo', messages: [{ role: 'user', content: prompt }] }),
    connections: batch.clients,
    amount,
  });
  const clean = (load: LoadResult, amount: number) => {
    if (load.non2xx > 0 || load.errors > 0 || load.timeouts > 0 || load.statusCodes['200'] !== amount)
      throw new Error(
        `${label}: ${amount} requests answered ${JSON.stringify(load.statusCodes)}, ${load.errors} errors, ${load.timeouts} timeouts`,
      );
  };
  context.log(`  ${label}: warm-up with ${batch.warmup} requests`);
  clean(await runLoad(spec(batch.warmup, 'warm-up {{i}}'), context.cpus.load, batch.timeoutSec * 1000), batch.warmup);
  const idle = await waitForIdle(server.pid, { timeoutMs: 30_000 });
  if (!idle.idle) context.log(`  ${label}: server still busy after ${idle.waitedMs} ms; measuring anyway`);
  context.log(`  ${label}: ${batch.lines} requests from ${batch.clients} clients`);
  const memory = rssPeak(server.pid, context.options.processes > 1);
  const idleBefore = memory.first;
  let load: LoadResult;
  let peak: Memory;
  try {
    load = await runLoad(spec(batch.lines, 'prompt {{i}}'), context.cpus.load, batch.timeoutSec * 1000);
  } finally {
    peak = memory.stop();
  }
  clean(load, batch.lines);
  const run = {
    requests: load.requests,
    seconds: load.seconds,
    requestsPerSec: round(batch.lines / load.seconds),
    load,
    rssMiB: { idleBefore, peak },
  };
  context.log(
    `  ${label}: ${run.requests} in ${run.seconds} s (${run.requestsPerSec}/s, p99 ${load.latencyMs.p99} ms)`,
  );
  return run;
};

const describeRun = (run: BatchRun) =>
  `upload ${run.seconds.upload} s, validation ${run.seconds.validation} s, lines ${run.seconds.lines} s (${run.linesPerSecRunning}/s), finalizing ${run.seconds.finalizing} s, download ${run.seconds.download} s`;

const tenths = (run: BatchRun) =>
  `first 10 % ${run.firstTenth.linesPerSec} lines/s, last 10 % ${run.lastTenth.linesPerSec} lines/s`;

export const batchScenario = async (context: Context): Promise<ScenarioResult> => {
  const { batch } = context.options.sizes;
  const { smoke } = context.options;
  const dir = join(context.workDir, 'batch-files');
  mkdirSync(dir, { recursive: true });
  const input = writeInput(join(dir, 'batch-input.jsonl'), 'l', batch.lines);
  const warmup = writeInput(join(dir, 'batch-warmup.jsonl'), 'w', batch.warmup);
  const config = batchConfig(batch.lines, input.bytes);
  const count = batch.lines.toLocaleString('en');

  // 1. The batch on LMDB.
  const lmdb = await withServer(context, sandbox(context.workDir, 'batch-lmdb', config), 'batch', (server) =>
    timedBatch(context, server, warmup, input, 'batch'),
  );
  // 2. The same requests one by one, on a fresh server with the same config.
  const single = await withServer(context, sandbox(context.workDir, 'batch-one-by-one', config), 'batch-single', (s) =>
    oneByOne(context, s, 'one by one'),
  );
  // 3. The batch on PostgreSQL, when it can run there.
  let pgRun: BatchRun | undefined;
  let pgReason: string | undefined;
  let cluster: BenchCluster | undefined;
  try {
    context.log('  starting a PostgreSQL cluster');
    cluster = await startBenchCluster(context.cpus.server);
    const url = await cluster.createDatabase();
    const box = onDatabase(sandbox(context.workDir, 'batch-pg', config), url);
    pgRun = await withServer(context, box, 'batch-pg', (server) =>
      timedBatch(context, server, warmup, input, 'batch-pg'),
    );
  } catch (error) {
    pgReason = error instanceof Error ? error.message : String(error);
    context.log(`  batch on PostgreSQL not run: ${pgReason}`);
  } finally {
    await cluster?.stop();
  }

  const speedup = ratio(lmdb.linesPerSec, single.requestsPerSec);
  const rss = (m: Memory) => `${m.rssMiB} MiB (anon ${m.anonMiB})`;
  const rows: Row[] = [
    {
      scenario: `Batch: ${count} echo chat completions, upload to completed, vs the same one by one (${batch.clients} clients)`,
      target: `>= ${minRatio} x one by one (goal ${goalRatio} x)`,
      measured: `${speedup.toFixed(2)} x`,
      detail: `batch ${lmdb.linesPerSec} lines/s (${lmdb.at.completed} s; ${tenths(lmdb)}); one by one ${single.requestsPerSec} req/s (${single.seconds} s, p99 ${single.load.latencyMs.p99} ms)`,
      met: smoke ? null : speedup >= minRatio,
    },
    {
      scenario: `Batch: ${count} lines, phases, upload to downloaded`,
      target: 'reported',
      measured: `upload ${lmdb.uploadMBps} MB/s, validation ${lmdb.validationMBps} MB/s`,
      detail: `${describeRun(lmdb)}; ${lmdb.linesPerSecDownloaded} lines/s to downloaded (${lmdb.at.downloaded} s); ${mb(lmdb.inputBytes).toFixed(1)} MB in, ${mb(lmdb.outputBytes).toFixed(1)} MB out; server RSS peak ${rss(lmdb.rssMiB.peak)}, idle before ${rss(lmdb.rssMiB.idleBefore)}`,
      met: null,
    },
    pgRun === undefined
      ? {
          scenario: `Batch on PostgreSQL: ${count} lines, upload to completed`,
          target: 'reported (vs LMDB)',
          measured: 'not run',
          detail: (pgReason ?? 'unknown').slice(0, 300),
          met: null,
        }
      : {
          scenario: `Batch on PostgreSQL: ${count} lines, upload to completed`,
          target: 'reported (vs LMDB)',
          measured: `${pgRun.linesPerSec} lines/s (${ratio(pgRun.linesPerSec, lmdb.linesPerSec).toFixed(2)} x LMDB)`,
          detail: `${pgRun.at.completed} s; ${tenths(pgRun)}; ${describeRun(pgRun)}; server RSS peak ${rss(pgRun.rssMiB.peak)}`,
          met: null,
        },
  ];
  const notes = [
    `batch: a JSONL file of ${count} echo chat completions (${mb(input.bytes).toFixed(1)} MB, custom_id l<i>, prompt "prompt <i>") uploaded as one multipart POST /v1/files streamed from the disk, POST /v1/batches, GET /v1/batches/{id} every ${batch.pollMs} ms (every ${validatingPollMs} ms while validating) until completed, the output file downloaded (streamed to the disk) and checked (${count} lines, each custom_id once, each answer its prompt). Times from the start of the upload; a status change is placed midway between the two reads around it (reads every ${batch.pollMs} ms: about ±${batch.pollMs / 2} ms). Validation: from the create's answer until the status left validating (in_progress_at - created_at of the batch object, whole seconds: ${lmdb.validationSecondsFromTimestamps ?? 'null'} s). First/last 10 %: completions per second between the last read at 0 completed and the first at >= 10 %, and between the last read at <= 90 % and the first at 100 % (the lines alone, before finalizing). MB = 10^6 bytes.`,
    `batch: one by one, ${count} POST ${endpoint} (waiting creates, numbered prompts) from ${batch.clients} autocannon connections against a fresh server with the same config (processing.concurrency 64, enterprise plan, limits 10^8/min, batches.maxLines ${config.batches.maxLines}); server RSS peak ${rss(single.rssMiB.peak)}. Each server had an untimed warm-up (a batch of ${batch.warmup} lines, or ${batch.warmup} requests one by one) and was idle before the timed run; RSS read every 50 ms. The ratio is the batch's lines/s (upload to completed) over the one-by-one requests/s.`,
    ...(pgRun === undefined
      ? [`batch on PostgreSQL: not run (${pgReason ?? 'unknown'}).`]
      : [
          `batch on PostgreSQL: the same batch and warm-up against airs serve with AIRS_DATABASE_URL on a throwaway cluster (the pg scenario's settings), the cluster on the server CPUs with airs.`,
        ]),
  ];
  return {
    name: 'batch',
    rows,
    notes,
    details: { config, lmdb, oneByOne: single, speedup, postgres: pgRun ?? { notRun: pgReason ?? null } },
  };
};
