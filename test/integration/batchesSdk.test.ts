import { createReadStream, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, describe, expect, it } from 'vitest';
import { createAccountWithKey } from '../support/processes.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * OpenAI's Files and Batches APIs through the official `openai` SDK against a real `airs serve` on LMDB (contract 16):
 * upload from a stream, create, poll to the end, download and join the output on `custom_id`, list with
 * auto-pagination, cancel mid-run, and another account's ids answer 404. Both endpoints, with `echo` and with an
 * `openai`-provider model behind a fake upstream on 127.0.0.1 that counts its calls.
 */

const serve = servedAirs();
const running: ServedAirs[] = [];
afterAll(async () => {
  for (const served of running) await served.stop();
});

type ChatLine = { custom_id: string; method: string; url: string; body: Record<string, unknown> };

const jsonlFile = (name: string, lines: readonly unknown[]): string => {
  const path = join(tmpdir(), `${name}-${process.pid}-${Date.now()}.jsonl`);
  writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
  return path;
};

const chatLines = (count: number, model: string, prefix = 'line'): ChatLine[] =>
  Array.from({ length: count }, (_, i) => ({
    custom_id: `${prefix}-${i}`,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model, messages: [{ role: 'user', content: `${prefix} number ${i}` }] },
  }));

const untilEnded = async (client: OpenAI, batchId: string, timeoutMs = 60_000) => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const batch = await client.batches.retrieve(batchId);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(batch.status)) return batch;
    if (Date.now() > deadline) throw new Error(`batch ${batchId} still ${batch.status}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const linesOf = async (client: OpenAI, fileId: string) => {
  const text = await (await client.files.content(fileId)).text();
  return (
    text
      .split('\n')
      .filter((line) => line !== '')
      // biome-ignore lint/suspicious/noExplicitAny: the lines are OpenAI's objects, checked field by field below
      .map((line) => JSON.parse(line) as Record<string, any>)
  );
};

describe('batches through the official openai SDK', { timeout: 120_000 }, () => {
  it('runs a chat-completions batch of echo lines from a streamed upload to an output file joined on custom_id', async () => {
    const served = await serve('airs-batch-sdk');
    running.push(served);
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    const lines = chatLines(25, 'echo');
    const file = await client.files.create({ file: createReadStream(jsonlFile('chat', lines)), purpose: 'batch' });
    expect(file).toMatchObject({ object: 'file', purpose: 'batch', status: 'processed' });
    expect(file.id).toMatch(/^file-/);
    expect(file.bytes).toBeGreaterThan(0);
    expect((await client.files.retrieve(file.id)).bytes).toBe(file.bytes);

    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
      metadata: { job: 'nightly' },
    });
    expect(created).toMatchObject({ object: 'batch', status: 'validating', input_file_id: file.id });
    expect(created.metadata).toEqual({ job: 'nightly' });
    const ended = await untilEnded(client, created.id);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: 25, completed: 25, failed: 0 });
    expect(ended.error_file_id).toBeNull();
    expect(ended.model).toBe('echo');
    expect(ended.completed_at).not.toBeNull();
    expect(ended.usage?.total_tokens).toBeGreaterThan(0);

    const output = await linesOf(client, ended.output_file_id as string);
    expect(output).toHaveLength(25);
    const byId = new Map(output.map((line) => [line.custom_id, line]));
    for (const line of lines) {
      const answer = byId.get(line.custom_id);
      expect(answer?.response.status_code).toBe(200);
      expect(answer?.response.body.object).toBe('chat.completion');
      expect(answer?.response.body.choices[0].message.content).toBe(
        (line.body.messages as { content: string }[])[0]?.content,
      );
      expect(answer?.error).toBeNull();
    }
    const outputFile = await client.files.retrieve(ended.output_file_id as string);
    expect(outputFile.purpose).toBe('batch_output');
  });

  it('runs a Responses batch against an openai-provider model, one upstream call per line, and lists batches page by page', async () => {
    const served = await serve('airs-batch-llm');
    running.push(served);
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    const lines = Array.from({ length: 6 }, (_, i) => ({
      custom_id: `r${i}`,
      method: 'POST',
      url: '/v1/responses',
      body: { model: 'llm', input: `question ${i}` },
    }));
    const file = await client.files.create({ file: createReadStream(jsonlFile('responses', lines)), purpose: 'batch' });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/responses',
      completion_window: '24h',
    });
    const ended = await untilEnded(client, created.id);
    expect(ended.status).toBe('completed');
    expect(ended.request_counts).toEqual({ total: 6, completed: 6, failed: 0 });
    const output = await linesOf(client, ended.output_file_id as string);
    for (let i = 0; i < 6; i++) {
      const line = output.find((entry) => entry.custom_id === `r${i}`);
      expect(line?.response.body.object).toBe('response');
      expect(line?.response.body.output[0].content[0].text).toBe(`upstream says: question ${i}`);
      expect(served.upstream.calls(`question ${i}`)).toBe(1);
    }

    // Two more batches, then the whole list through the SDK's auto-pagination, one per page.
    for (let i = 0; i < 2; i++)
      await client.batches.create({ input_file_id: file.id, endpoint: '/v1/responses', completion_window: '24h' });
    const seen: string[] = [];
    for await (const batch of client.batches.list({ limit: 1 })) seen.push(batch.id);
    expect(seen).toHaveLength(3);
    expect(new Set(seen).size).toBe(3);
    expect(seen[2]).toBe(created.id);
  });

  it('cancels a batch mid-run: lines not run are in the error file as batch_cancelled, the counts add up', async () => {
    const served = await serve('airs-batch-cancel');
    running.push(served);
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    const file = await client.files.create({
      file: createReadStream(jsonlFile('slow', chatLines(30, 'slow'))),
      purpose: 'batch',
    });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    // Running: its lines are queued and some are being processed by the slow model.
    for (let i = 0; i < 100; i++) {
      const batch = await client.batches.retrieve(created.id);
      if (batch.status === 'in_progress') break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const cancelling = await client.batches.cancel(created.id);
    expect(['cancelling', 'cancelled']).toContain(cancelling.status);
    const ended = await untilEnded(client, created.id);
    expect(ended.status).toBe('cancelled');
    expect(ended.cancelled_at).not.toBeNull();
    const counts = ended.request_counts ?? { total: 0, completed: 0, failed: 0 };
    expect(counts.total).toBe(30);
    expect(counts.completed + counts.failed).toBe(30);
    const errors = await linesOf(client, ended.error_file_id as string);
    expect(errors.length).toBe(counts.failed);
    expect(errors.every((line) => line.response === null && line.error.code === 'batch_cancelled')).toBe(true);
  });

  it("answers another account's file and batch ids with 404", async () => {
    const served = await serve('airs-batch-foreign');
    running.push(served);
    const owner = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    const file = await owner.files.create({
      file: createReadStream(jsonlFile('mine', chatLines(2, 'echo'))),
      purpose: 'batch',
    });
    const batch = await owner.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const { key } = await createAccountWithKey(served.box, 'other@example.com', 'scale');
    const other = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: key, maxRetries: 0 });
    const status = (call: Promise<unknown>) =>
      call.then(
        () => 200,
        (error: unknown) => (error as { status?: number }).status,
      );
    expect(await status(other.files.retrieve(file.id))).toBe(404);
    expect(await status(other.files.content(file.id))).toBe(404);
    expect(await status(other.files.delete(file.id))).toBe(404);
    expect(await status(other.batches.retrieve(batch.id))).toBe(404);
    expect(await status(other.batches.cancel(batch.id))).toBe(404);
    expect(
      await status(
        other.batches.create({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }),
      ),
    ).toBe(404);
    const listed: string[] = [];
    for await (const each of other.files.list()) listed.push(each.id);
    expect(listed).toEqual([]);

    // A name beyond Latin-1 travels in the download's header too (plain ASCII, and exactly as UTF-8).
    const named = await owner.files.create({
      file: await OpenAI.toFile(Buffer.from('{"a":1}\n'), 'données ✓.jsonl'),
      purpose: 'batch',
    });
    expect(named.filename).toBe('données ✓.jsonl');
    const download = await owner.files.content(named.id);
    expect(download.headers.get('content-disposition')).toBe(
      `attachment; filename="donn_es _.jsonl"; filename*=UTF-8''${encodeURIComponent('données ✓.jsonl')}`,
    );
    expect(await download.text()).toBe('{"a":1}\n');
  });

  it('fails a batch whose file has bad lines, listing each with its line, code and param, and runs none of it', async () => {
    const served = await serve('airs-batch-invalid');
    running.push(served);
    const client = new OpenAI({ baseURL: `${served.url}/v1`, apiKey: served.key, maxRetries: 0 });
    // A good line for the upstream model: had anything run, the upstream would have been called.
    const good = chatLines(1, 'llm', 'good')[0] as ChatLine;
    const path = join(tmpdir(), `bad-${process.pid}-${Date.now()}.jsonl`);
    writeFileSync(
      path,
      [
        JSON.stringify(good),
        '{not json',
        JSON.stringify({ ...good, custom_id: 'good-0' }),
        JSON.stringify({ ...good, custom_id: 'm', method: 'GET' }),
        JSON.stringify({ ...good, custom_id: 'u', url: '/v1/responses' }),
        JSON.stringify({ ...good, custom_id: 'n', body: { ...good.body, model: 'no-such-model' } }),
        JSON.stringify({ ...good, custom_id: 's', body: { ...good.body, stream: true } }),
        JSON.stringify({ ...good, custom_id: 't', body: { ...good.body, temperature: 7 } }),
        JSON.stringify({ method: 'POST', url: '/v1/chat/completions', body: good.body }),
      ].join('\n'),
    );
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    const ended = await untilEnded(client, created.id);
    expect(ended.status).toBe('failed');
    expect(ended.failed_at).not.toBeNull();
    expect(ended.request_counts).toEqual({ total: 0, completed: 0, failed: 0 });
    const errors = ended.errors?.data ?? [];
    const at = (line: number) => errors.find((entry) => entry.line === line);
    expect(at(2)).toMatchObject({ code: 'invalid_json' });
    expect(at(3)).toMatchObject({ code: 'duplicate_custom_id', param: 'custom_id' });
    expect(at(4)).toMatchObject({ code: 'invalid_method', param: 'method' });
    expect(at(5)).toMatchObject({ code: 'invalid_url', param: 'url' });
    expect(at(6)).toMatchObject({ code: 'invalid_request', param: 'body.model' });
    expect(at(6)?.message).toMatch(/unknown model/);
    expect(at(7)).toMatchObject({ code: 'invalid_request', param: 'body.stream' });
    expect(at(8)).toMatchObject({ code: 'invalid_request', param: 'body.temperature' });
    expect(at(9)).toMatchObject({ code: 'invalid_custom_id', param: 'custom_id' });
    expect(at(1)).toBeUndefined();
    expect(errors).toHaveLength(8);
    expect(ended.output_file_id).toBeNull();
    expect(served.upstream.calls('good number 0')).toBe(0);
  });
});
