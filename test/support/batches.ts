import { call } from './processes.js';

/** Batches through the HTTP API as a client makes them (contract 16): a JSONL upload, a create, a wait. */

export type BatchObject = {
  id: string;
  status: string;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
};

/** Chat-completions lines, one per prompt, `custom_id` `c0`, `c1`, … */
export const chatLines = (model: string, prompts: readonly string[]) =>
  prompts.map((content, i) => ({
    custom_id: `c${i}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content }] },
  }));

/** Uploads `lines` as a JSONL file (`purpose` before the file, as the SDKs send it); returns its id. */
export const uploadLines = async (url: string, key: string, lines: readonly unknown[]): Promise<string> => {
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([`${lines.map((line) => JSON.stringify(line)).join('\n')}\n`]), 'lines.jsonl');
  const answer = await fetch(`${url}/v1/files`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const body = (await answer.json()) as { id: string };
  if (answer.status !== 200) throw new Error(`upload answered ${answer.status}: ${JSON.stringify(body)}`);
  return body.id;
};

/** Creates a chat-completions batch of an uploaded file; returns the batch as created. */
export const createBatch = async (url: string, key: string, inputFileId: string): Promise<BatchObject> => {
  const answer = await call(url, 'POST', '/v1/batches', key, {
    input_file_id: inputFileId,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
  if (answer.status !== 200) throw new Error(`create answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body as unknown as BatchObject;
};

/** Polls the batch until `done` says so (or `timeoutMs` passes: an error naming its status). */
export const batchWhen = async (
  url: string,
  key: string,
  batchId: string,
  done: (batch: BatchObject) => boolean,
  timeoutMs = 30_000,
): Promise<BatchObject> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = (await call(url, 'GET', `/v1/batches/${batchId}`, key)).body as unknown as BatchObject;
    if (done(batch)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${batchId} still ${batch.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

export const isEnded = (batch: BatchObject) => ['completed', 'failed', 'expired', 'cancelled'].includes(batch.status);

/** The bytes of a file as the API gives them (`GET /v1/files/{id}/content`, by key). */
export const fileContent = async (url: string, key: string, fileId: string): Promise<Buffer> => {
  const answer = await fetch(`${url}/v1/files/${fileId}/content`, { headers: { authorization: `Bearer ${key}` } });
  if (answer.status !== 200) throw new Error(`content answered ${answer.status}`);
  return Buffer.from(await answer.arrayBuffer());
};
