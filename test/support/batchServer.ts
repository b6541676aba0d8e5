import { createHash } from 'node:crypto';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { openLmdbStore } from '../../src/adapters/lmdb/LmdbStore.js';
import type { StoreShape } from '../../src/ports/Store.js';
import { createAccountWithKey, type fileSandboxes, type ServerProcess, sleep, startServer } from './processes.js';

/**
 * A real `airs serve` on LMDB for the batch fault tests, with the config each test chooses (a short lease, a short
 * window, bounds): its sandbox, an `enterprise` account's key, the server, an official `openai` client on it, and
 * `restart` on the same data directory (after a SIGKILL).
 */
export type BatchServer = {
  readonly box: ReturnType<ReturnType<typeof fileSandboxes>>;
  readonly key: string;
  server: ServerProcess;
  client: OpenAI;
  /** Starts `airs serve` again on the same data directory (the last one must have ended). */
  restart(): Promise<void>;
  /** Stops the server (SIGTERM, or the signal given) and resolves once it has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
};

const clientOf = (url: string, key: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: key, maxRetries: 0 });

export const startBatchServer = async (
  newBox: ReturnType<typeof fileSandboxes>,
  label: string,
  config: Record<string, unknown>,
): Promise<BatchServer> => {
  const box = newBox(label);
  box.writeConfig(config);
  const { key } = await createAccountWithKey(box, `${label}@example.com`, 'enterprise');
  const first = await startServer(box);
  const served: BatchServer = {
    box,
    key,
    server: first,
    client: clientOf(first.url, key),
    restart: async () => {
      served.server = await startServer(box);
      served.client = clientOf(served.server.url, key);
    },
    stop: async (signal) => {
      await served.server.stop(signal);
    },
  };
  return served;
};

export type ChatLine = {
  readonly custom_id: string;
  readonly method: 'POST';
  readonly url: '/v1/chat/completions';
  readonly body: { readonly model: string; readonly messages: readonly { role: string; content: string }[] };
};

/** `count` chat lines on `model`, custom_id `<prefix>-<i>`, each asking `<prefix> <i><padding>`. */
export const chatLines = (count: number, model: string, prefix: string, padding = ''): ChatLine[] =>
  Array.from({ length: count }, (_, i) => ({
    custom_id: `${prefix}-${i}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: `${prefix} ${i}${padding}` }] },
  }));

/** Uploads the lines as a JSONL file (written to the sandbox, streamed by the SDK) with purpose `batch`. */
export const uploadLines = async (served: BatchServer, name: string, lines: readonly unknown[]) => {
  const path = join(served.box.dir, `${name}.jsonl`);
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  return served.client.files.create({ file: createReadStream(path), purpose: 'batch' });
};

export const createBatch = (client: OpenAI, inputFileId: string) =>
  client.batches.create({ input_file_id: inputFileId, endpoint: '/v1/chat/completions', completion_window: '24h' });

const finalStatuses = ['completed', 'failed', 'expired', 'cancelled'];

/** Polls the batch every `everyMs` until `done` says so (or it ends, or `timeoutMs` passes: then it throws). */
export const pollBatch = async (
  client: OpenAI,
  batchId: string,
  done: (batch: OpenAI.Batches.Batch) => boolean,
  { everyMs = 100, timeoutMs = 120_000 } = {},
): Promise<OpenAI.Batches.Batch> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await client.batches.retrieve(batchId);
    if (done(batch) || finalStatuses.includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${batchId} is still ${batch.status} after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
};

/** Polls until the batch has ended. */
export const untilEnded = (client: OpenAI, batchId: string, timeoutMs = 120_000) =>
  pollBatch(client, batchId, () => false, { timeoutMs });

// biome-ignore lint/suspicious/noExplicitAny: the lines are OpenAI's objects, checked field by field by the tests
export type OutputLine = Record<string, any>;

/** A file's JSONL lines, parsed (none for a null id). */
export const linesOfFile = async (client: OpenAI, fileId: string | null | undefined): Promise<OutputLine[]> => {
  if (fileId === null || fileId === undefined) return [];
  const text = await (await client.files.content(fileId)).text();
  return text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as OutputLine);
};

/** How many times each custom_id occurs in the lines. */
export const customIdCounts = (lines: readonly OutputLine[]): Map<string, number> => {
  const counts = new Map<string, number>();
  for (const line of lines) counts.set(line.custom_id, (counts.get(line.custom_id) ?? 0) + 1);
  return counts;
};

/** Every file of the account, through the SDK's auto-pagination. */
export const allFiles = async (client: OpenAI) => {
  const files: OpenAI.Files.FileObject[] = [];
  for await (const file of client.files.list()) files.push(file);
  return files;
};

/** Opens the data directory's LMDB store in this process (the server must have stopped), runs `use`, closes it. */
export const withStore = async <T>(dataDir: string, use: (store: StoreShape) => Promise<T>): Promise<T> => {
  const store = openLmdbStore(dataDir);
  try {
    return await use(store);
  } finally {
    await store.close();
  }
};

/** The process's resident set (VmRSS of /proc/<pid>/status), and its anonymous and file-backed parts, in bytes. */
export const residentBytes = (pid: number): { total: number; anon: number; file: number } => {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => {
    const kb = new RegExp(`${name}:\\s+(\\d+)\\s+kB`).exec(status)?.[1];
    if (kb === undefined) throw new Error(`no ${name} for process ${pid}`);
    return Number(kb) * 1024;
  };
  return { total: field('VmRSS'), anon: field('RssAnon'), file: field('RssFile') };
};

/**
 * A `POST /v1/files` body made as it is read, never whole in memory: multipart/form-data with `purpose=batch`, then
 * a JSONL file of echo lines (about 1 KB each) of at most `fileBytes` bytes, 64 KB per pull. With `holdAfter`, the
 * body stops (and `held` resolves) once that many bytes of the file were handed to the caller: an upload cut mid-way.
 */
export const streamedUpload = (fileBytes: number, options: { holdAfter?: number } = {}) => {
  const boundary = `airs-upload-${process.pid}-${Date.now()}`;
  const encoder = new TextEncoder();
  const head = encoder.encode(
    `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nbatch\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.jsonl"\r\n` +
      'Content-Type: application/jsonl\r\n\r\n',
  );
  const tail = encoder.encode(`\r\n--${boundary}--\r\n`);
  const hash = createHash('sha256');
  const padding = 'x'.repeat(880);
  let line = 0;
  let written = 0;
  let release = () => {};
  let onHeld = () => {};
  const held = new Promise<void>((resolve) => {
    onHeld = resolve;
  });
  const fileChunk = (): Uint8Array | undefined => {
    const parts: string[] = [];
    let size = 0;
    for (;;) {
      const text = `${JSON.stringify({
        custom_id: `big-${line}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'echo', messages: [{ role: 'user', content: `line ${line} ${padding}` }] },
      })}\n`;
      // ASCII: a character is a byte.
      if (written + size + text.length > fileBytes || size >= 64 * 1024) break;
      parts.push(text);
      size += text.length;
      line++;
    }
    if (size === 0) return undefined;
    const chunk = encoder.encode(parts.join(''));
    hash.update(chunk);
    written += chunk.byteLength;
    return chunk;
  };
  let stage: 'head' | 'file' | 'done' = 'head';
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (stage === 'head') {
          stage = 'file';
          controller.enqueue(head);
          return;
        }
        if (stage === 'done') return controller.close();
        if (options.holdAfter !== undefined && written >= options.holdAfter) {
          onHeld();
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return controller.close();
        }
        const chunk = fileChunk();
        if (chunk === undefined) {
          stage = 'done';
          controller.enqueue(tail);
        } else controller.enqueue(chunk);
      },
      cancel() {
        release();
      },
    },
    // Nothing is made ahead of the reader: what was made was asked for.
    { highWaterMark: 0 },
  );
  return {
    body,
    contentType: `multipart/form-data; boundary=${boundary}`,
    /** Bytes of the file handed to the caller so far. */
    written: () => written,
    /** Lines of the file made so far. */
    lines: () => line,
    /** The SHA-256 (hex) of the file's bytes made so far: the whole file's, once the body was read to its end. */
    sha256: () => hash.copy().digest('hex'),
    held,
    /** Lets a held body end (cut short: the upload it carries is not a whole form). */
    release: () => release(),
  };
};

/** Sends a streamed upload with `fetch` (the body as it is made); resolves with the answer, or the failure. */
export const sendUpload = async (
  url: string,
  key: string,
  upload: ReturnType<typeof streamedUpload>,
): Promise<{ status: number; body: Record<string, unknown> } | Error> => {
  try {
    const response = await fetch(`${url}/v1/files`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': upload.contentType },
      body: upload.body,
      duplex: 'half',
    } as RequestInit);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  } catch (error) {
    return error instanceof Error ? error : new Error(String(error));
  }
};
