import { createReadStream, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerProcess, startServer } from '../support/processes.js';
import { type ServedAirs, servedAirs } from '../support/servedAirs.js';

/**
 * vLLM's own sampling fields through a real `airs serve` (issue 41): the `vllm` model lists `top_k`, `min_p` and
 * `guided_json` in its `passThrough`, and the fake upstream on 127.0.0.1 records each body it got. The official
 * `openai` SDK is the client; it sends fields it does not know as given (the Python SDK's `extra_body`).
 */

const serve = servedAirs();
let airs: ServedAirs;
let client: OpenAI;
/** The server started again after a kill (the last case), stopped after all. */
let restarted: ServerProcess | undefined;
beforeAll(async () => {
  airs = await serve('airs-pass-through', (baseUrl) => [
    {
      id: 'vllm',
      provider: 'openai',
      baseUrl,
      upstreamModel: 'meta-llama/Llama-3.1-8B-Instruct',
      maxRetries: 0,
      passThrough: ['top_k', 'min_p', 'guided_json'],
    },
  ]);
  client = new OpenAI({ baseURL: `${airs.url}/v1`, apiKey: airs.key, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  // Killed: its call to the fake never ends, and a drain would wait for it.
  await restarted?.stop('SIGKILL');
  await airs?.stop();
}, 30_000);

const guidedJson = {
  type: 'object',
  properties: { city: { type: 'string' }, days: { type: 'integer', minimum: 1 } },
  required: ['city'],
};

/** A chat completions body the SDK's types do not know: sent as given. */
const chatBody = (model: string, prompt: string, extra: Record<string, unknown>) =>
  ({
    model,
    messages: [{ role: 'user', content: prompt }],
    ...extra,
  }) as OpenAI.Chat.ChatCompletionCreateParamsNonStreaming;

/** A raw POST (for bodies JSON.stringify cannot write, such as a number beyond a double). */
const post = (path: string, text: string) =>
  fetch(`${airs.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${airs.key}`, 'content-type': 'application/json' },
    body: text,
  });

const nested = (levels: number): unknown => (levels === 0 ? 1 : { a: nested(levels - 1) });

describe('a model’s passThrough fields', { timeout: 60_000 }, () => {
  it('top_k, min_p and guided_json listed by the model reach the upstream as given from chat.completions.create', async () => {
    const prompt = 'pass my sampling through';
    const completion = await client.chat.completions.create(
      chatBody('vllm', prompt, { temperature: 0.2, top_k: 40, min_p: 0.05, guided_json: guidedJson }),
    );
    expect(completion.choices[0]?.message.content).toBe(`upstream says: ${prompt}`);
    expect(airs.sentFor(prompt)).toEqual([
      {
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        messages: [{ role: 'user', content: prompt }],
        temperature: 0.2,
        top_k: 40,
        min_p: 0.05,
        guided_json: guidedJson,
      },
    ]);
  });

  it('sends the passed-through fields again on the attempt after a failed one, from the request as stored', async () => {
    // The fake answers this prompt 429 once; with no retry inside the attempt, the second attempt sends it again.
    const completion = await client.chat.completions.create(chatBody('vllm', 'rate-limit-once', { top_k: 7 }));
    expect(completion.choices[0]?.message.content).toBe('upstream says: rate-limit-once');
    const sent = airs.sentFor('rate-limit-once');
    expect(sent).toHaveLength(2);
    for (const body of sent) expect(body).toMatchObject({ top_k: 7 });
  });

  it('top_k listed by the model reaches the upstream from responses.create, streamed or not', async () => {
    const prompt = 'a Response with top_k';
    const response = await client.responses.create({
      model: 'vllm',
      input: prompt,
      top_k: 12,
      min_p: 0.1,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    expect(response.output_text).toBe(`upstream says: ${prompt}`);
    expect(airs.sentFor(prompt)).toEqual([
      {
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        messages: [{ role: 'user', content: prompt }],
        top_k: 12,
        min_p: 0.1,
      },
    ]);
    const streamed = 'a streamed Response with top_k';
    const stream = await client.responses.create({
      model: 'vllm',
      input: streamed,
      stream: true,
      top_k: 3,
    } as OpenAI.Responses.ResponseCreateParamsStreaming);
    for await (const _ of stream);
    expect(airs.sentFor(streamed)).toMatchObject([{ stream: true, top_k: 3 }]);
  });

  it('top_k reaches the upstream from each line of a batch', async () => {
    const lines = [1, 2, 3].map((i) => ({
      custom_id: `line-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model: 'vllm', messages: [{ role: 'user', content: `batch line ${i}` }], top_k: i * 10 },
    }));
    const path = join(tmpdir(), `pass-through-${process.pid}-${Date.now()}.jsonl`);
    writeFileSync(path, `${lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    let batch = created;
    for (const deadline = Date.now() + 30_000; !['completed', 'failed'].includes(batch.status); ) {
      if (Date.now() > deadline) throw new Error(`batch still ${batch.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      batch = await client.batches.retrieve(created.id);
    }
    expect(batch.status).toBe('completed');
    expect(batch.request_counts).toEqual({ total: 3, completed: 3, failed: 0 });
    for (const i of [1, 2, 3]) expect(airs.sentFor(`batch line ${i}`)).toMatchObject([{ top_k: i * 10 }]);
  });

  it('refuses top_k with the precise error where the model does not list it, and sends nothing', async () => {
    const refusal = client.chat.completions.create(chatBody('llm', 'top_k on a model without it', { top_k: 40 }));
    await expect(refusal).rejects.toMatchObject({
      status: 400,
      param: 'top_k',
      message: '400 top_k: unknown parameter "top_k"; airs refuses what it would not honour',
    });
    // A field the model does not list, beside one it does.
    const unlisted = client.chat.completions.create(
      chatBody('vllm', 'an unlisted field', { top_k: 40, repetition_penalty: 1.1 }),
    );
    await expect(unlisted).rejects.toMatchObject({
      status: 400,
      param: 'repetition_penalty',
      message: '400 repetition_penalty: unknown parameter "repetition_penalty"; airs refuses what it would not honour',
    });
    expect(airs.sentFor('top_k on a model without it')).toEqual([]);
    expect(airs.sentFor('an unlisted field')).toEqual([]);
  });

  it('fails a batch whose line gives a field its model does not list, naming the line and the field', async () => {
    const line = (model: string, i: number) => ({
      custom_id: `c-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model, messages: [{ role: 'user', content: `refused line ${i}` }], top_k: 5 },
    });
    const path = join(tmpdir(), `pass-through-bad-${process.pid}-${Date.now()}.jsonl`);
    writeFileSync(path, `${JSON.stringify(line('vllm', 1))}\n${JSON.stringify(line('llm', 2))}\n`);
    const file = await client.files.create({ file: createReadStream(path), purpose: 'batch' });
    const created = await client.batches.create({
      input_file_id: file.id,
      endpoint: '/v1/chat/completions',
      completion_window: '24h',
    });
    let batch = created;
    for (const deadline = Date.now() + 30_000; !['completed', 'failed'].includes(batch.status); ) {
      if (Date.now() > deadline) throw new Error(`batch still ${batch.status}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      batch = await client.batches.retrieve(created.id);
    }
    expect(batch.status).toBe('failed');
    expect(batch.errors?.data).toEqual([
      {
        code: 'invalid_request',
        line: 2,
        message: 'top_k: unknown parameter "top_k"; airs refuses what it would not honour',
        param: 'body.top_k',
      },
    ]);
  });

  it('refuses a passed-through value nested too deep, too large, or holding a number beyond JSON, and sends nothing', async () => {
    // 33 levels: within the body's own bound (maxJsonDepth, 64), beyond a passed-through value's (32).
    const deep = client.chat.completions.create(chatBody('vllm', 'too deep', { guided_json: nested(33) }));
    await expect(deep).rejects.toMatchObject({
      status: 400,
      param: 'guided_json',
      message: '400 guided_json: is nested deeper than 32 levels, the limit of a passed-through value',
    });
    const thirtyTwo = await client.chat.completions.create(
      chatBody('vllm', 'deep enough', { guided_json: nested(32) }),
    );
    expect(thirtyTwo.choices[0]?.message.content).toBe('upstream says: deep enough');
    const large = { type: 'string', enum: Array.from({ length: 30_000 }, (_, i) => `choice-${i}`) };
    const bytes = Buffer.byteLength(JSON.stringify(large));
    const tooLarge = client.chat.completions.create(chatBody('vllm', 'too large', { guided_json: large }));
    await expect(tooLarge).rejects.toMatchObject({
      status: 400,
      param: 'guided_json',
      message: `400 guided_json: is ${bytes} bytes as JSON; a passed-through value is at most 262144`,
    });
    const overflow = await post('/v1/responses', '{"model": "vllm", "input": "an overflowing number", "top_k": 1e999}');
    expect(overflow.status).toBe(400);
    expect(await overflow.json()).toMatchObject({
      error: { param: 'top_k', message: 'top_k: must be a JSON value; it holds a number too large for JSON' },
    });
    for (const prompt of ['too deep', 'too large', 'an overflowing number']) expect(airs.sentFor(prompt)).toEqual([]);
  });

  it('sends the passed-through fields again after airs serve is killed mid-call and started again', async () => {
    // The fake never answers `hang`: the call is in flight when the server dies.
    const created = await client.responses.create({
      model: 'vllm',
      input: 'hang',
      background: true,
      top_k: 9,
      guided_json: guidedJson,
    } as OpenAI.Responses.ResponseCreateParamsNonStreaming);
    const until = async (count: number) => {
      for (const deadline = Date.now() + 20_000; airs.sentFor('hang').length < count; ) {
        if (Date.now() > deadline) throw new Error(`the upstream got ${airs.sentFor('hang').length} calls`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    };
    await until(1);
    await airs.server.stop('SIGKILL');
    restarted = await startServer(airs.box);
    // The dead process's lease is ended at the start (LMDB): the request's next attempt reads it from the store.
    await until(2);
    expect(airs.sentFor('hang')).toEqual(
      Array.from({ length: 2 }, () => ({
        model: 'meta-llama/Llama-3.1-8B-Instruct',
        messages: [{ role: 'user', content: 'hang' }],
        top_k: 9,
        guided_json: guidedJson,
      })),
    );
    expect(created.status).toBe('queued');
  });
});
