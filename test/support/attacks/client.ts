import { request as httpRequest } from 'node:http';

/**
 * The HTTP client of the attack drivers (issue 40): what an attacker's script sends, over a real socket to 127.0.0.1,
 * each call bounded in time and in the bytes of the answer it keeps. No vitest import: the bench runs these too.
 */

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** A call's time bound: what is left until `deadline` (a `performance.now()` time), at most `atMostMs`, at least 1 ms. */
export const timeLeft = (deadline: number, atMostMs: number): number =>
  Math.max(1, Math.min(atMostMs, deadline - performance.now()));

/** What one call got: its status (0 when no answer came: the reason is in `error`), its body and how long it took. */
export type Answer = {
  readonly status: number;
  /** The answer's body as text, at most `keptAnswerBytes` of it. */
  readonly text: string;
  readonly ms: number;
  readonly error?: string;
};

/** The most of an answer's body any driver keeps: answers are ids and short JSON, never a file. */
const keptAnswerBytes = 256 * 1024;

/** The answer's body as JSON, or undefined. */
export const jsonOf = <T = Record<string, unknown>>(answer: Answer): T | undefined => {
  try {
    return JSON.parse(answer.text) as T;
  } catch {
    return undefined;
  }
};

/** Only loopback: the drivers are attacks on a server of the bench or a test, never on anything else. */
const checkedTarget = (base: string, path: string): URL => {
  const target = new URL(path, base);
  if (target.hostname !== '127.0.0.1' && target.hostname !== 'localhost')
    throw new Error(`the attack drivers only send to 127.0.0.1, not ${target.hostname}`);
  return target;
};

export type Body = Uint8Array | string | AsyncIterable<Uint8Array>;

/**
 * Sends one request (its body written as the socket takes it, from bytes or a stream) and reads its answer. Once an
 * answer arrives, the rest of the body is not sent (a server that refuses an upload early says so before reading it).
 * Never rejects: a connection refused, reset or timed out is an answer with status 0.
 */
export const send = (
  base: string,
  method: string,
  path: string,
  options: { readonly headers?: Record<string, string>; readonly body?: Body; readonly timeoutMs?: number } = {},
): Promise<Answer> =>
  new Promise((resolve) => {
    const started = performance.now();
    const target = checkedTarget(base, path);
    let settled = false;
    let answered = false;
    const finish = (answer: Omit<Answer, 'ms'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve({ ...answer, ms: performance.now() - started });
    };
    const request = httpRequest(target, { method, headers: options.headers, agent: false });
    const timer = setTimeout(() => {
      request.destroy();
      finish({ status: 0, text: '', error: `no answer within ${options.timeoutMs ?? 30_000} ms` });
    }, options.timeoutMs ?? 30_000);
    request.on('error', (error) => finish({ status: 0, text: '', error: error.message }));
    request.on('response', (response) => {
      answered = true;
      const chunks: Buffer[] = [];
      let kept = 0;
      response.on('data', (chunk: Buffer) => {
        if (kept >= keptAnswerBytes) return;
        chunks.push(chunk);
        kept += chunk.length;
      });
      const done = () => {
        finish({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        request.destroy();
      };
      response.on('end', done);
      response.on('close', done);
    });
    const body = options.body;
    if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) {
      request.end(body);
      return;
    }
    void (async () => {
      try {
        for await (const chunk of body) {
          if (answered || settled || request.destroyed) return;
          if (!request.write(chunk))
            await new Promise<void>((drained) => {
              const go = () => {
                request.off('drain', go);
                request.off('close', go);
                drained();
              };
              request.on('drain', go);
              request.on('close', go);
            });
        }
        if (!request.destroyed) request.end();
      } catch (error) {
        request.destroy(error instanceof Error ? error : new Error(String(error)));
      }
    })();
  });

/** A JSON call with the account's key. */
export const callJson = (
  base: string,
  method: 'GET' | 'POST' | 'DELETE',
  path: string,
  key: string,
  body?: unknown,
  timeoutMs = 30_000,
): Promise<Answer> =>
  send(base, method, path, {
    headers: {
      authorization: `Bearer ${key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    timeoutMs,
  });

/** The parts of a multipart form as an upload sends them: `purpose` first, then the file (as the SDKs send it). */
const formParts = (boundary: string, filename: string, purpose: string) => ({
  head: Buffer.from(
    `--${boundary}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\n${purpose}\r\n` +
      `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\n` +
      'content-type: application/jsonl\r\n\r\n',
  ),
  tail: Buffer.from(`\r\n--${boundary}--\r\n`),
});

async function* framed(head: Uint8Array, file: Body, tail: Uint8Array): AsyncGenerator<Uint8Array> {
  yield head;
  if (typeof file === 'string') yield Buffer.from(file);
  else if (file instanceof Uint8Array) yield file;
  else yield* file;
  yield tail;
}

/**
 * `POST /v1/files` of `file` (bytes, or a stream of them, never held whole here), streamed with a known length when
 * `fileBytes` is given (as curl sends a file) and chunked otherwise.
 */
export const uploadFile = (
  base: string,
  key: string,
  file: Body,
  options: {
    readonly filename?: string;
    readonly purpose?: string;
    readonly fileBytes?: number;
    readonly timeoutMs?: number;
  } = {},
): Promise<Answer> => {
  const boundary = `airs-attack-${Math.random().toString(36).slice(2)}`;
  const { head, tail } = formParts(boundary, options.filename ?? 'input.jsonl', options.purpose ?? 'batch');
  const known =
    options.fileBytes ??
    (typeof file === 'string' ? Buffer.byteLength(file) : file instanceof Uint8Array ? file.length : undefined);
  return send(base, 'POST', '/v1/files', {
    headers: {
      authorization: `Bearer ${key}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      ...(known === undefined ? {} : { 'content-length': String(head.length + known + tail.length) }),
    },
    body: framed(head, file, tail),
    timeoutMs: options.timeoutMs ?? 120_000,
  });
};

/** `bytes` of a stream, `chunkBytes` at a time, every chunk the same buffer (cheap to send gigabytes). */
export async function* repeatedBytes(bytes: number, chunk: Uint8Array): AsyncGenerator<Uint8Array> {
  let left = bytes;
  while (left > 0) {
    const next = left >= chunk.length ? chunk : chunk.subarray(0, left);
    left -= next.length;
    yield next;
  }
}

/** Creates a chat-completions batch of an uploaded file. */
export const createBatch = (base: string, key: string, inputFileId: string, timeoutMs = 30_000): Promise<Answer> =>
  callJson(
    base,
    'POST',
    '/v1/batches',
    key,
    { input_file_id: inputFileId, endpoint: '/v1/chat/completions', completion_window: '24h' },
    timeoutMs,
  );

/** What the drivers read of a batch. */
export type BatchSeen = {
  readonly id: string;
  readonly status: string;
  readonly errors: unknown;
  readonly request_counts?: { readonly total: number; readonly completed: number; readonly failed: number };
  /** Reads since the one this came from that got no answer (a stalled server): it is then the last one seen. */
  readonly unanswered?: number;
};

/**
 * The batch as `GET /v1/batches/{id}` shows it now (its id, status, counts and the first of its errors), or its status
 * as `http <status>` when it cannot be read.
 */
export const readBatch = async (base: string, key: string, batchId: string, timeoutMs = 10_000): Promise<BatchSeen> => {
  const answer = await callJson(base, 'GET', `/v1/batches/${batchId}`, key, undefined, timeoutMs);
  const batch = answer.status === 200 ? jsonOf<BatchSeen & { errors: { data?: unknown[] } | null }>(answer) : undefined;
  if (batch === undefined)
    return { id: batchId, status: answer.status === 0 ? 'no answer' : `http ${answer.status}`, errors: null };
  const errors = batch.errors?.data?.slice(0, 3) ?? null;
  return { id: batch.id, status: batch.status, errors, request_counts: batch.request_counts };
};

/** The batch read again; as it was last seen (its `unanswered` counted) when this read gets no answer. */
export const rereadBatch = async (
  base: string,
  key: string,
  seen: BatchSeen,
  timeoutMs = 10_000,
): Promise<BatchSeen> => {
  const read = await readBatch(base, key, seen.id, timeoutMs);
  return read.status === 'no answer' || read.status.startsWith('http ')
    ? { ...seen, unanswered: (seen.unanswered ?? 0) + 1 }
    : read;
};

/** A batch as its create answered it (`validating`). */
export const createdBatch = (id: string): BatchSeen => ({ id, status: 'validating', errors: null });

export const endedStatuses: readonly string[] = ['completed', 'failed', 'expired', 'cancelled'];

/** One chat-completions line of a batch's input file, as JSON text. */
export const chatLine = (customId: string, model: string, content: string, extraBody: string = ''): string =>
  `{"custom_id":${JSON.stringify(customId)},"method":"POST","url":"/v1/chat/completions","body":{"model":${JSON.stringify(
    model,
  )},"messages":[{"role":"user","content":${JSON.stringify(content)}}]${extraBody}}}`;

/** Latencies in ms summed up: count, p50, p99 and max. */
export const latencies = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (share: number) =>
    sorted.length === 0
      ? Number.NaN
      : (sorted[Math.min(sorted.length - 1, Math.ceil(share * sorted.length) - 1)] as number);
  return { count: sorted.length, p50Ms: at(0.5), p99Ms: at(0.99), maxMs: sorted.at(-1) ?? Number.NaN };
};

/** Counts of statuses (`{"200": 5, "429": 5}`). */
export const countStatuses = (answers: readonly Answer[]): Record<string, number> => {
  const counts: Record<string, number> = {};
  for (const answer of answers) {
    const name = answer.status === 0 ? 'no answer' : String(answer.status);
    counts[name] = (counts[name] ?? 0) + 1;
  }
  return counts;
};
