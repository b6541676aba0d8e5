import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type BatchSeen,
  callJson,
  chatLine,
  createBatch,
  createdBatch,
  endedStatuses,
  jsonOf,
  rereadBatch,
  sleep,
  uploadFile,
} from './client.js';

/**
 * Issue 40, finding 7: an upstream (a misbehaving OpenAI-compatible server) answers every call with `answerBytes` of
 * text (the issue: 8 MiB), and a batch of `lines` lines on its model (64 and more: the output file was built 64
 * answers at a time into one string, past V8's longest string). Before the fix nothing bounds an answer, finalizing
 * throws and starts over for ever, and neither the account nor the operator can cancel the batch.
 */

/**
 * The misbehaving upstream: every chat completion is answered with the same precomputed body (one `choices[0]` of
 * `answerBytes` characters). It keeps nothing per call (the tests' fakeOpenAi keeps every answer it gives, which at
 * 8 MiB a call would make the bench's own memory the story).
 */
export const startBigAnswerUpstream = async (answerBytes: number) => {
  const body = Buffer.from(
    JSON.stringify({
      id: 'chatcmpl-big',
      object: 'chat.completion',
      created: 0,
      model: 'big',
      choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'x'.repeat(answerBytes) } }],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    }),
  );
  let calls = 0;
  const server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      if (request.method === 'GET' && request.url === '/v1/models') {
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ object: 'list', data: [{ id: 'big', object: 'model' }] }));
        return;
      }
      if (request.method !== 'POST' || request.url !== '/v1/chat/completions') {
        response.writeHead(404).end();
        return;
      }
      calls++;
      response.writeHead(200, { 'content-type': 'application/json', 'content-length': String(body.length) });
      response.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    /** Chat completions answered so far (an attempt's retries each count). */
    calls: () => calls,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
};

export type BigAnswersOptions = {
  readonly url: string;
  readonly attackerKey: string;
  /** The model the server routes to the big-answer upstream. */
  readonly model: string;
  readonly lines: number;
  /** How long the batch is watched, at most, before the cancels are tried. */
  readonly watchMs: number;
  /** A batch still finalizing this long after it was first seen so is stuck: the cancels are tried then. */
  readonly stuckMs?: number;
  /** The operator's cancel (`airs batches cancel`), run by the caller: its exit code and what it said. */
  readonly operatorCancel?: (batchId: string) => Promise<{ readonly code: number | null; readonly said: string }>;
  /** How long the batch is watched after the cancels. */
  readonly afterCancelMs?: number;
};

export type BigAnswersOutcome = {
  /** When the batch was first seen `finalizing`, and when it ended, in seconds from its create (null: not seen). */
  readonly finalizingAfterSeconds: number | null;
  readonly endedAfterSeconds: number | null;
  /** The batch when the watch ended (before any cancel), and how long it was watched. */
  readonly watched: BatchSeen;
  readonly watchedSeconds: number;
  /** The account's own cancel (`POST /v1/batches/{id}/cancel`) and the operator's, tried when it had not ended. */
  readonly accountCancel?: { readonly status: number; readonly batchStatus: string };
  readonly operatorCancel?: { readonly code: number | null; readonly said: string };
  /** The batch after the cancels. */
  readonly final: BatchSeen;
};

export const bigAnswers = async (options: BigAnswersOptions): Promise<BigAnswersOutcome> => {
  const { url, attackerKey: key } = options;
  const lines = Array.from({ length: options.lines }, (_, i) => chatLine(`big${i}`, options.model, `answer big ${i}`));
  const uploaded = await uploadFile(url, key, `${lines.join('\n')}\n`, { filename: 'big-answers.jsonl' });
  const fileId = jsonOf<{ id: string }>(uploaded)?.id;
  if (uploaded.status !== 200 || fileId === undefined) throw new Error(`the upload answered ${uploaded.status}`);
  const created = await createBatch(url, key, fileId);
  const batchId = jsonOf<{ id: string }>(created)?.id;
  if (created.status !== 200 || batchId === undefined) throw new Error(`the create answered ${created.status}`);
  const started = performance.now();
  const since = () => (performance.now() - started) / 1000;
  let finalizingAfterSeconds: number | null = null;
  let endedAfterSeconds: number | null = null;
  let watched = createdBatch(batchId);
  const stuckSeconds = (options.stuckMs ?? 15_000) / 1000;
  while (since() * 1000 < options.watchMs) {
    watched = await rereadBatch(url, key, watched);
    if (watched.status === 'finalizing' && finalizingAfterSeconds === null) finalizingAfterSeconds = since();
    if (finalizingAfterSeconds !== null && since() - finalizingAfterSeconds > stuckSeconds) break;
    if (endedStatuses.includes(watched.status)) {
      endedAfterSeconds = since();
      return { finalizingAfterSeconds, endedAfterSeconds, watched, watchedSeconds: since(), final: watched };
    }
    await sleep(250);
  }
  const watchedSeconds = since();
  const cancelled = await callJson(url, 'POST', `/v1/batches/${batchId}/cancel`, key);
  const accountCancel = {
    status: cancelled.status,
    batchStatus: jsonOf<{ status: string }>(cancelled)?.status ?? `http ${cancelled.status}`,
  };
  const operatorCancel = await options.operatorCancel?.(batchId);
  let final = watched;
  const afterUntil = performance.now() + (options.afterCancelMs ?? 5_000);
  while (performance.now() < afterUntil) {
    final = await rereadBatch(url, key, final);
    if (endedStatuses.includes(final.status)) break;
    await sleep(250);
  }
  return {
    finalizingAfterSeconds,
    endedAfterSeconds,
    watched,
    watchedSeconds,
    accountCancel,
    ...(operatorCancel === undefined ? {} : { operatorCancel }),
    final,
  };
};
